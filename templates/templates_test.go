package templates

import (
	"errors"
	"html/template"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var opts = Options{Placeholders: map[string]string{"app_name": ".AppName", "status": ".StatusText"}, Inject: ".Script"}

type fields struct {
	AppName, StatusText string
	Script              template.HTML
}

func execute(t *testing.T, p *Page, data any) string {
	t.Helper()
	b, err := p.Execute(data)
	if err != nil {
		t.Fatalf("Execute: %v", err)
	}
	return string(b)
}

func TestParse_PlaceholdersBecomeEscapedFields(t *testing.T) {
	p, err := Parse(`<h1>{{app_name}} is {{ status }}</h1>{{- app_name -}} <p>{{.StatusText}}</p>`, opts)
	if err != nil {
		t.Fatal(err)
	}
	got := execute(t, p, fields{AppName: `<script>x</script>`, StatusText: "Starting"})
	want := `<h1>&lt;script&gt;x&lt;/script&gt; is Starting</h1>&lt;script&gt;x&lt;/script&gt;<p>Starting</p>`
	if got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
}

// A value is escaped for where the page writes it: in a script as a JavaScript
// string, in an attribute, in a URL, as text. A hostile value never ends its
// context.
func TestExecute_EscapesForTheContext(t *testing.T) {
	p, err := Parse(`<html><body>
<script>var app = {{app_name}}; var s = "{{status}}";</script>
<a title="{{app_name}}" href="/apps?name={{app_name}}">x</a>
<a href="{{status}}">y</a>
<p style="color: {{status}}">{{app_name}}</p>
</body></html>`, opts)
	if err != nil {
		t.Fatal(err)
	}
	hostile := `</script><script>alert(1)</script>"' onmouseover=alert(2) x="`
	got := execute(t, p, fields{AppName: hostile, StatusText: "javascript:alert(3)"})
	for _, bad := range []string{"<script>alert(1)", `" onmouseover=alert(2)`, `href="javascript:`, "color: javascript"} {
		if strings.Contains(got, bad) {
			t.Errorf("page holds %q unescaped:\n%s", bad, got)
		}
	}
	for _, want := range []string{
		`var app = "\u003c/script\u003e\u003cscript\u003ealert(1)\u003c/script\u003e\"' onmouseover=alert(2) x=\"";`,
		`var s = "javascript:alert(3)";`,
		`title="&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;&#34;&#39; onmouseover=alert(2) x=&#34;"`,
		`href="/apps?name=%3c%2fscript%3e%3cscript%3ealert%281%29%3c%2fscript%3e%22%27%20onmouseover%3dalert%282%29%20x%3d%22"`,
		`href="#ZgotmplZ"`,
		`style="color: ZgotmplZ"`,
		`<p style="color: ZgotmplZ">&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;&#34;&#39; onmouseover=alert(2) x=&#34;</p>`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("page lacks %s:\n%s", want, got)
		}
	}
}

func TestParse_InjectsBeforeTheLastBody(t *testing.T) {
	data := fields{Script: `<script>reaper()</script>`}
	for src, want := range map[string]string{
		`<body><p>a</p></BODY></html>`:                 `<body><p>a</p><script>reaper()</script></BODY></html>`,
		`<p>"</body>" in text</p><p>b</p></body>`:      `<p>"</body>" in text</p><p>b</p><script>reaper()</script></body>`,
		`<p>no body end</p>`:                           `<p>no body end</p><script>reaper()</script>`,
		`<head>{{ .Script }}</head><body></body>`:      `<head><script>reaper()</script></head><body></body>`,
		`<body>{{- .Script -}}</body><!-- comment -->`: `<body><script>reaper()</script></body>`,
	} {
		p, err := Parse(src, opts)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		if got := execute(t, p, data); got != want {
			t.Errorf("%s:\n got %s\nwant %s", src, got, want)
		}
	}
}

func TestParse_Errors(t *testing.T) {
	for src, want := range map[string]string{
		"{{app_nmae}}":             "unknown placeholder {{app_nmae}} (use {{app_name}}, {{status}})",
		"<p>{{status</p>":          "page:1:",
		"<p>{{if .AppName}}</p>":   "unexpected EOF",
		strings.Repeat("x", 1<<20): ErrTooLarge.Error(),
	} {
		if _, err := Parse(src, opts); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%.20q) = %v, want %q", src, err, want)
		}
	}
	p, err := Parse(`<p>{{.Nope}}</p>`, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Execute(fields{}); err == nil || !strings.Contains(err.Error(), "Nope") {
		t.Errorf("a field that does not exist: %v", err)
	}
}

func TestExecute_BoundsTheOutput(t *testing.T) {
	p, err := Parse(`{{define "x"}}{{.AppName}}{{template "x" .}}{{end}}{{template "x" .}}`, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Execute(fields{AppName: strings.Repeat("y", 64<<10)}); !errors.Is(err, ErrOutputTooLarge) && (err == nil || !strings.Contains(err.Error(), ErrOutputTooLarge.Error())) {
		t.Errorf("a page that repeats itself: %v, want %v", err, ErrOutputTooLarge)
	}
}

func TestLoadFile_RefusesSymlinksOutOfItsDirectory(t *testing.T) {
	dir := t.TempDir()
	pages := filepath.Join(dir, "pages")
	os.Mkdir(pages, 0o755)
	secret := filepath.Join(dir, "secret.txt")
	os.WriteFile(secret, []byte("token=hunter2"), 0o600)
	os.WriteFile(filepath.Join(pages, "wait.html"), []byte("<p>{{status}}</p>"), 0o600)
	os.Symlink(secret, filepath.Join(pages, "evil.html"))
	os.Symlink("wait.html", filepath.Join(pages, "alias.html"))

	p, err := LoadFile(filepath.Join(pages, "wait.html"), opts)
	if err != nil {
		t.Fatalf("wait.html: %v", err)
	}
	if got := execute(t, p, fields{StatusText: "Starting"}); got != "<p>Starting</p>" {
		t.Fatalf("wait.html renders %q", got)
	}
	if _, err := LoadFile(filepath.Join(pages, "alias.html"), opts); err != nil {
		t.Errorf("a link inside the directory is refused: %v", err)
	}
	_, err = LoadFile(filepath.Join(pages, "evil.html"), opts)
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("a link out of the directory was followed: %v", err)
	}
	if _, err := LoadFile(filepath.Join(pages, "missing.html"), opts); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("missing: %v", err)
	}
}
