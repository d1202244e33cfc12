package sandbox

import "path/filepath"

// homeSecrets are the folders and files under a person's home that the
// sandbox hides: the keys and tokens a program of theirs could read and
// send out through an allowed host (SSH, GnuPG, the cloud CLIs' and
// package registries' tokens, git's stored credentials, password
// stores, the desktop keyring), and the browser profiles, whose cookies
// are sessions with every site the person is logged into.
var homeSecrets = []string{
	".ssh", ".gnupg", ".aws", ".azure", ".config/gcloud", ".kube", ".docker", ".oci",
	".netrc", ".git-credentials", ".config/git/credentials", ".config/gh", ".config/hub",
	".npmrc", ".pypirc", ".cargo/credentials", ".cargo/credentials.toml", ".gem/credentials",
	".password-store", ".local/share/keyrings", ".pki",
	".mozilla", ".config/google-chrome", ".config/google-chrome-beta", ".config/google-chrome-unstable",
	".config/chromium", ".config/BraveSoftware", ".config/microsoft-edge", ".config/vivaldi", ".config/opera",
	"snap/chromium", "snap/firefox", ".var/app/org.chromium.Chromium", ".var/app/com.google.Chrome", ".var/app/org.mozilla.firefox",
	".config/nmhost", ".local/share/nmhost", ".local/state/nmhost",
}

// HiddenPaths are the host paths a run hides, given the person's home
// ("" when unknown) and the caller's own (Config.Hide: the host's data
// directory): each cleaned and absolute.
func HiddenPaths(home string, extra []string) []string {
	var out []string
	if home != "" {
		for _, s := range homeSecrets {
			out = append(out, filepath.Join(home, s))
		}
	}
	for _, e := range extra {
		if filepath.IsAbs(e) {
			out = append(out, filepath.Clean(e))
		}
	}
	return out
}
