package e2e

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/freeport"
)

// The README's demo curls, run in the order the README gives them against its
// demo configuration, get what their comments say: above all the monitor's
// 200 {"monitoring": true}, which only a sleeping app gives (once the app is
// awake, the monitor gets the app's own answer).
func TestReadme_TheDemoCurlsGetWhatTheySay(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, demo, _ := strings.Cut(string(readme), "## Try the demo")
	_, block, _ := strings.Cut(demo, "```sh\n")
	block, _, _ = strings.Cut(block, "```")
	src, err := os.ReadFile("../examples/demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	hello, api := freeport.Addr(t), freeport.Addr(t)
	cfg := strings.NewReplacer("127.0.0.1:8080", "127.0.0.1:0", "127.0.0.1:9090", "127.0.0.1:0", "./data/demo", "%DIR%/data",
		"./bin/demoapp", "%DEMOAPP%", "127.0.0.1:3001", hello, "127.0.0.1:3002", api, `"2s"`, `"300ms"`).Replace(string(src))
	p := startReaper(t, t.TempDir(), cfg)
	for _, id := range []string{"hello", "api"} {
		p.waitLog(func(l map[string]any) bool {
			return l["msg"] == "app status changed" && l["app"] == id && l["to"] == "Down"
		}, 10*time.Second)
	}

	quoted := regexp.MustCompile(`-(H|A) '([^']*)'`)
	ran := 0
	for _, line := range strings.Split(strings.TrimSpace(block), "\n") {
		cmd, comment, _ := strings.Cut(line, "#")
		if !strings.Contains(cmd, ":8080/") {
			continue // the admin API's health
		}
		var host string
		var header []string
		for _, m := range quoted.FindAllStringSubmatch(cmd, -1) {
			if m[1] == "A" {
				header = append(header, "User-Agent", m[2])
				continue
			}
			name, value, _ := strings.Cut(m[2], ": ")
			if name == "Host" {
				host = value
			} else {
				header = append(header, name, value)
			}
		}
		resp, err := p.request("GET", host, "/", nil, header...)
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		body := readAll(t, resp)
		ran++
		comment = strings.TrimSpace(comment)
		var ok bool
		switch {
		case strings.HasPrefix(comment, "a monitor"):
			ok = resp.StatusCode == 200 && regexp.MustCompile(`"monitoring":\s*true`).MatchString(body)
		case strings.Contains(comment, `{"status": "Down"}`):
			ok = resp.StatusCode == 200 && regexp.MustCompile(`"status":\s*"Down"`).MatchString(body)
		case strings.HasPrefix(comment, "held"):
			ok = resp.StatusCode == 200 && resp.Header.Get("CleverCloud-Reaper-Status") == "" && strings.Contains(body, "hello")
		case strings.HasPrefix(comment, "503 at once"):
			ok = resp.StatusCode == 503 && resp.Header.Get("Retry-After") != ""
		default:
			t.Fatalf("the README's curl %q says nothing this test knows how to check", line)
		}
		if !ok {
			t.Errorf("%s\n  got %d %s", line, resp.StatusCode, body)
		}
	}
	if ran != 4 {
		t.Errorf("ran %d of the README's curls on the gateway, want 4", ran)
	}
}
