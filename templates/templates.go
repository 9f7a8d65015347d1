// Package templates loads, checks and renders pages that operators supply, such as
// a custom waiting page: HTML with {{placeholders}} that reaper fills in, escaped.
//
// Placeholders are checked when the configuration loads: an unknown one is an
// error that names it, never a page that shows "{{app_nmae}}" to visitors. Files
// are read through an os.Root, so a symbolic link cannot lead out of the page's
// directory.
package templates

import (
	"errors"
	"fmt"
	"html"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// MaxSize bounds a page: it is held in memory and sent to every visitor of a
// sleeping app.
const MaxSize = 256 << 10

// ErrTooLarge: the page is larger than MaxSize.
var ErrTooLarge = errors.New("templates: page larger than 256 KiB")

// Page is a parsed page: literal HTML and placeholders, in order.
type Page struct {
	parts []part
	size  int
}

type part struct {
	text        string
	placeholder bool
}

// Parse reads html, whose placeholders must be among allowed. The error names the
// first unknown placeholder and lists the known ones.
func Parse(src string, allowed []string) (*Page, error) {
	if len(src) > MaxSize {
		return nil, ErrTooLarge
	}
	p := &Page{size: len(src)}
	rest := src
	for {
		i := strings.Index(rest, "{{")
		if i < 0 {
			p.parts = append(p.parts, part{text: rest})
			return p, nil
		}
		j := strings.Index(rest[i:], "}}")
		if j < 0 {
			return nil, errors.New("unclosed {{ (placeholders are written {{name}})")
		}
		name := strings.TrimSpace(rest[i+2 : i+j])
		if !slices.Contains(allowed, name) {
			return nil, fmt.Errorf("unknown placeholder {{%s}} (use %s)", name, list(allowed))
		}
		p.parts = append(p.parts, part{text: rest[:i]}, part{text: name, placeholder: true})
		rest = rest[i+j+2:]
	}
}

func list(names []string) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = "{{" + n + "}}"
	}
	return strings.Join(out, ", ")
}

// Render fills the placeholders with values, HTML-escaped; a placeholder without a
// value renders empty.
func (p *Page) Render(values map[string]string) []byte {
	var b strings.Builder
	b.Grow(p.size + 256)
	for _, pt := range p.parts {
		if pt.placeholder {
			b.WriteString(html.EscapeString(values[pt.text]))
		} else {
			b.WriteString(pt.text)
		}
	}
	return []byte(b.String())
}

// LoadFile reads and parses the page at path. The file is opened through an
// os.Root on its directory, so a symbolic link pointing out of that directory is
// refused.
func LoadFile(path string, allowed []string) (*Page, error) {
	root, err := os.OpenRoot(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("%s cannot be read: %w", strconv.Quote(path), unwrapPath(err))
	}
	defer root.Close()
	return load(root.FS(), filepath.Base(path), allowed)
}

func load(fsys fs.FS, name string, allowed []string) (*Page, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, fmt.Errorf("%s cannot be read: %w", strconv.Quote(name), unwrapPath(err))
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return nil, fmt.Errorf("%s cannot be read: %w", strconv.Quote(name), unwrapPath(err))
	}
	if len(data) > MaxSize {
		return nil, ErrTooLarge
	}
	return Parse(string(data), allowed)
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
