// Package viewer serves `nmhost serve`: the local web page where a person
// browses the denial log live, and the session gateway (session
// settings and agent runs over a websocket), to loopback clients that hold
// the access token.
package viewer
