package dashboard

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"net/http"
	"net/url"
	"strconv"
)

// The stylesheet and the script are files of the package, embedded in the
// binary and served by the dashboard itself: no CDN, no external asset. Pages
// name them with a hash of their content (?v=), so a browser may keep them for
// a year and still gets a new one with a new binary.

//go:embed assets/dashboard.css assets/dashboard.js
var assetFS embed.FS

type asset struct {
	body        []byte
	contentType string
	version     string
}

var (
	cssAsset = loadAsset("assets/dashboard.css", "text/css; charset=utf-8")
	jsAsset  = loadAsset("assets/dashboard.js", "text/javascript; charset=utf-8")
)

func loadAsset(name, contentType string) asset {
	b, err := assetFS.ReadFile(name)
	if err != nil {
		panic("dashboard: embedded asset missing: " + name) // a build without the file cannot work at all
	}
	sum := sha256.Sum256(b)
	return asset{body: b, contentType: contentType, version: hex.EncodeToString(sum[:6])}
}

// serveAsset serves a; with the current version in ?v= it may be cached for good.
func serveAsset(a asset) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", a.contentType)
		h.Set("ETag", `"`+a.version+`"`)
		if r.URL.Query().Get("v") == a.version {
			h.Set("Cache-Control", "public, max-age=31536000, immutable")
		} else {
			h.Set("Cache-Control", "no-cache")
		}
		if r.Header.Get("If-None-Match") == `"`+a.version+`"` {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		h.Set("Content-Length", strconv.Itoa(len(a.body)))
		_, _ = w.Write(a.body)
	}
}

func cssURL() string { return "/dashboard.css?v=" + cssAsset.version }
func jsURL() string  { return "/dashboard.js?v=" + jsAsset.version }

// appURL is the page of an app.
func appURL(id string) string { return "/apps/" + url.PathEscape(id) }
