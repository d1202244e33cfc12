// Package host serves the native-messaging protocol: it reads framed
// requests from the browser, routes each by type to one handler, and writes
// one reply per request, with every decision taken by mediator and netproxy.
package host
