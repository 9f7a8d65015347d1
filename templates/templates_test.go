package templates

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var allowed = []string{"app_name", "status"}

func TestParseAndRender(t *testing.T) {
	p, err := Parse(`<h1>{{app_name}} is {{ status }}</h1>{{app_name}}`, allowed)
	if err != nil {
		t.Fatal(err)
	}
	got := string(p.Render(map[string]string{"app_name": `<script>x</script>`, "status": "Down"}))
	want := `<h1>&lt;script&gt;x&lt;/script&gt; is Down</h1>&lt;script&gt;x&lt;/script&gt;`
	if got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
	if got := string(p.Render(nil)); got != "<h1> is </h1>" {
		t.Errorf("no values: %q", got)
	}
}

func TestParse_Errors(t *testing.T) {
	for src, want := range map[string]string{
		"{{app_nmae}}":             "unknown placeholder {{app_nmae}} (use {{app_name}}, {{status}})",
		"<p>{{status</p>":          "unclosed {{ (placeholders are written {{name}})",
		strings.Repeat("x", 1<<20): ErrTooLarge.Error(),
	} {
		if _, err := Parse(src, allowed); err == nil || err.Error() != want {
			t.Errorf("Parse(%.20q) = %v, want %q", src, err, want)
		}
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

	p, err := LoadFile(filepath.Join(pages, "wait.html"), allowed)
	if err != nil || string(p.Render(map[string]string{"status": "Down"})) != "<p>Down</p>" {
		t.Fatalf("wait.html: %v", err)
	}
	if _, err := LoadFile(filepath.Join(pages, "alias.html"), allowed); err != nil {
		t.Errorf("a link inside the directory is refused: %v", err)
	}
	_, err = LoadFile(filepath.Join(pages, "evil.html"), allowed)
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("a link out of the directory was followed: %v", err)
	}
	if _, err := LoadFile(filepath.Join(pages, "missing.html"), allowed); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("missing: %v", err)
	}
}
