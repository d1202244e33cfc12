// Package shown computes the digest that binds a person's answer to the
// prompt it was given in: the host keeps it for every prompt it sends,
// the prompt window computes it over the prompt exactly as it received
// it (extension/shown.js), and the host takes an answer only with the
// same digest. docs/protocol.md ("prompt") defines the encoding.
package shown
