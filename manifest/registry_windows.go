//go:build windows

package manifest

import "golang.org/x/sys/windows/registry"

func registryRoot(system bool) registry.Key {
	if system {
		return registry.LOCAL_MACHINE
	}
	return registry.CURRENT_USER
}

// setRegistry makes key's default value the manifest path, which is how
// Chromium browsers and Firefox find host manifests on Windows.
func setRegistry(system bool, key, manifestPath string) error {
	k, _, err := registry.CreateKey(registryRoot(system), key, registry.SET_VALUE)
	if err != nil {
		return err
	}
	defer k.Close()
	return k.SetStringValue("", manifestPath)
}

func readRegistry(system bool, key string) (string, error) {
	k, err := registry.OpenKey(registryRoot(system), key, registry.QUERY_VALUE)
	if err != nil {
		return "", err
	}
	defer k.Close()
	v, _, err := k.GetStringValue("")
	return v, err
}

func deleteRegistry(system bool, key string) error {
	return registry.DeleteKey(registryRoot(system), key)
}
