package viewer

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"
)

// The page is plain HTML, CSS and JavaScript embedded in the binary: no
// build step, no framework, nothing fetched from anywhere else.
//
//go:embed static
var staticFiles embed.FS

func staticHandler() http.Handler {
	files := http.FileServerFS(staticFiles)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/") {
			http.NotFound(w, r) // no directory listings
			return
		}
		files.ServeHTTP(w, r)
	})
}

func (s *Server) handleIndex(w http.ResponseWriter, r *http.Request) {
	b, err := fs.ReadFile(staticFiles, "static/index.html")
	if err != nil {
		http.Error(w, "the viewer page is missing from this build", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(b)
}
