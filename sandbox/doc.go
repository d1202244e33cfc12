// Package sandbox runs one program in a bubblewrap sandbox in which the
// workspace is the only writable place and the host's proxy the only
// network, under limits, and kills all it started when the run ends.
package sandbox
