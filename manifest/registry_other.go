//go:build !windows

package manifest

import "errors"

// Elsewhere browsers find manifests by path alone; Install and Uninstall
// refuse GOOS=windows off Windows, so these are never reached with effect.

var errNoRegistry = errors.New("no Windows registry on this system")

func setRegistry(system bool, key, manifestPath string) error { return nil }

func readRegistry(system bool, key string) (string, error) { return "", errNoRegistry }

func deleteRegistry(system bool, key string) error { return nil }
