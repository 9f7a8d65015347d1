// Package templates loads, checks and renders pages that operators supply, such as
// a custom waiting page: HTML rendered through html/template, so that every value
// is escaped for where it is written (text, attribute, URL, script, style).
//
// Pages imported from elsewhere keep their {{placeholders}}: each is translated
// to the template field it stands for ({{app_name}} to {{.AppName}}, say). A page
// may also use template actions of its own ({{.ETA.Seconds}}, {{if .ETA.Known}}).
// Placeholders are checked when the configuration loads: an unknown one is an
// error that names it, never a page that shows "{{app_nmae}}" to visitors. Files
// are read through an os.Root, so a symbolic link cannot lead out of the page's
// directory.
package templates

import (
	"bytes"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// MaxSize bounds a page: it is held in memory and sent to every visitor of a
// sleeping app.
const MaxSize = 256 << 10

// MaxOutput bounds what a page renders to (a template may repeat itself): past
// it, Execute fails.
const MaxOutput = 4 * MaxSize

// ErrTooLarge: the page is larger than MaxSize.
var ErrTooLarge = errors.New("templates: page larger than 256 KiB")

// ErrOutputTooLarge: the page rendered to more than MaxOutput.
var ErrOutputTooLarge = errors.New("templates: page rendered to more than 1 MiB")

// Options say how a page is parsed.
type Options struct {
	// Placeholders maps each placeholder a page may write bare ({{app_name}}) to
	// the template field it stands for (".AppName").
	Placeholders map[string]string
	// Inject is a field (".Script") added right before the page's last </body>,
	// or at its end without one, unless the page writes it itself.
	Inject string
}

// Page is a parsed page.
type Page struct {
	tmpl *template.Template
	size int
}

// bareAction is a template action made of one name, a placeholder: {{app_name}},
// {{ status }}, {{- node -}}.
var bareAction = regexp.MustCompile(`\{\{(-?\s*)([A-Za-z_][A-Za-z0-9_]*)(\s*-?)\}\}`)

// keywords are the template actions that are one bare word.
var keywords = []string{"end", "else", "break", "continue", "nil", "true", "false"}

// Parse reads src: its placeholders must be among opts.Placeholders. The error
// names the first unknown placeholder and lists the known ones.
func Parse(src string, opts Options) (*Page, error) {
	if len(src) > MaxSize {
		return nil, ErrTooLarge
	}
	var unknown string
	text := bareAction.ReplaceAllStringFunc(src, func(action string) string {
		m := bareAction.FindStringSubmatch(action)
		if slices.Contains(keywords, m[2]) {
			return action
		}
		field, ok := opts.Placeholders[m[2]]
		if !ok {
			if unknown == "" {
				unknown = m[2]
			}
			return action
		}
		return "{{" + m[1] + field + m[3] + "}}"
	})
	if unknown != "" {
		return nil, fmt.Errorf("unknown placeholder {{%s}} (use %s)", unknown, list(opts.Placeholders))
	}
	if opts.Inject != "" && !writes(text, opts.Inject) {
		text = inject(text, "{{"+opts.Inject+"}}")
	}
	t, err := template.New("page").Option("missingkey=error").Parse(text)
	if err != nil {
		return nil, errors.New(strings.TrimPrefix(err.Error(), "template: "))
	}
	return &Page{tmpl: t, size: len(src)}, nil
}

// writes reports whether the page writes the field in an action of its own.
func writes(text, field string) bool {
	return regexp.MustCompile(`\{\{-?\s*` + regexp.QuoteMeta(field) + `\s*-?\}\}`).MatchString(text)
}

// inject puts s right before the last </body> of text, in any case, or at its
// end.
func inject(text, s string) string {
	if i := strings.LastIndex(strings.ToLower(text), "</body"); i >= 0 {
		return text[:i] + s + text[i:]
	}
	return text + s
}

func list(placeholders map[string]string) string {
	names := make([]string, 0, len(placeholders))
	for n := range placeholders {
		names = append(names, n)
	}
	slices.Sort(names)
	for i, n := range names {
		names[i] = "{{" + n + "}}"
	}
	return strings.Join(names, ", ")
}

// Execute renders the page with data into a buffer (so a failed render never
// leaves half a page) and returns it. It fails when data lacks a field the page
// uses, when a value cannot be written where the page puts it (html/template's
// checks), or past MaxOutput.
func (p *Page) Execute(data any) ([]byte, error) {
	w := &limitedBuffer{max: MaxOutput}
	w.Grow(p.size + 4<<10)
	if err := p.tmpl.Execute(w, data); err != nil {
		return nil, errors.New(strings.TrimPrefix(err.Error(), "template: "))
	}
	return w.Bytes(), nil
}

// limitedBuffer is a buffer that refuses to grow past max.
type limitedBuffer struct {
	bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if b.Len()+len(p) > b.max {
		return 0, ErrOutputTooLarge
	}
	return b.Buffer.Write(p)
}

// LoadFile reads and parses the page at path. The file is opened through an
// os.Root on its directory, so a symbolic link pointing out of that directory is
// refused.
func LoadFile(path string, opts Options) (*Page, error) {
	root, err := os.OpenRoot(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("%s cannot be read: %w", strconv.Quote(path), unwrapPath(err))
	}
	defer root.Close()
	return load(root.FS(), filepath.Base(path), opts)
}

func load(fsys fs.FS, name string, opts Options) (*Page, error) {
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
	return Parse(string(data), opts)
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
