// Package frame reads and writes Chrome native-messaging frames (a 32-bit
// native-endian length followed by that many bytes of JSON) with bounded
// memory, and splits replies over the browser's 1 MiB limit into chunks.
package frame
