// Package cli is nmhost's command line: host mode when a browser launches
// it, and the subcommands a person types (install, doctor, denials, demo).
package cli
