// Package manifest writes, checks and removes the native-messaging host
// manifests through which each browser finds and launches nmhost.
package manifest
