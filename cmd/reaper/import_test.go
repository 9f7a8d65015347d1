package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reapergw/reaper/config"
)

func TestImportOtoroshi(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"import-otoroshi", "testdata/otoroshi-routes.json"}, nil, &stdout, &stderr)
	if err != nil {
		t.Fatalf("import: %v\n%s", err, stderr.String())
	}
	want := `# Imported from an Otoroshi route export. Check it with: reaper check --config FILE
routes:
  - backend:
      targets:
        - https://app-11111111-2222-3333-4444-555555555555.cleverapps.io
    frontend:
      domains:
        - shop.example.com
        - shop.example.com/api
      strip_path: false
    id: route_1b2c3d
    name: shop
    plugins:
      - config:
          allow_waiting_page: true
          api_behavior: unavailable
          app_id: app_11111111-2222-3333-4444-555555555555
          fail_timeout: 15m
          grace_period: 1h
          monitoring_filters:
            - regex: (?i)uptimerobot
              source: user_agent
          must_be_up_at:
            - days:
                - mon
                - fri
              end: "19:00"
              start: "08:00"
          owner_id: orga_x
          ready_delay: 3s
          timezone: Europe/Paris
        exclude:
          - /static/.*
        plugin: reaper
  - backend:
      root: /blog
      targets:
        - url: http://10.0.0.5:8080
          weight: 3
        - http://10.0.0.6
    enabled: false
    frontend:
      domains:
        - blog.example.com
    id: route_2
`
	if stdout.String() != want {
		t.Errorf("output:\n%s\nwant:\n%s", stdout.String(), want)
	}
	wantSkipped := "not imported: route route_1b2c3d: plugin cp:otoroshi.next.plugins.OverrideHost (reaper has no equivalent; add what you need by hand)\n" +
		"not imported: route route_2: plugin cp:otoroshi.next.plugins.ApikeyCalls (reaper has no equivalent; add what you need by hand)\n"
	if stderr.String() != wantSkipped {
		t.Errorf("stderr:\n%s\nwant:\n%s", stderr.String(), wantSkipped)
	}

	// The result is a valid configuration for the Clever Cloud driver.
	file := filepath.Join(t.TempDir(), "imported.yaml")
	cfg := "paas:\n  driver: clevercloud\n  clevercloud: {token: dummy-token}\n" + strings.SplitN(stdout.String(), "\n", 2)[1]
	if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := config.Load(file, nil); err != nil {
		t.Errorf("the imported routes do not load: %v", err)
	}
}

func TestImportOtoroshi_Errors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"name": "no id"}`), 0o600)
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"import-otoroshi", bad}, nil, &stdout, &stderr)
	if err != exitCode(1) || !strings.Contains(stderr.String(), "route 0 has no id") {
		t.Errorf("%v %q", err, stderr.String())
	}
	stderr.Reset()
	if err := run(context.Background(), []string{"import-otoroshi"}, nil, &stdout, &stderr); err != exitCode(2) {
		t.Errorf("no file: %v", err)
	}
}

func TestFormatSeconds(t *testing.T) {
	for in, want := range map[float64]string{3600: "1h", 900: "15m", 90: "1m30s", 10: "10s", 3: "3s", 0: "0s", 0.5: "500ms", 5400: "1h30m", 3605: "1h0m5s"} {
		if got := formatSeconds(in); got != want {
			t.Errorf("formatSeconds(%v) = %q, want %q", in, got, want)
		}
	}
}
