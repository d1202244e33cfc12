// Package app is the application core: it opens the data directory's
// store, config, admin policy, fetcher and runtime once, and holds the
// operations whose rules must give one answer through every front end
// (the native host, the viewer, the CLI), which only decode a request,
// call the core and encode the reply.
package app
