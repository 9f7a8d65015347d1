package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/reapergw/reaper/internal/clusterenv"
)

// nginx, when installed (Debian's nginx-light), is part J's second floor: a C
// server answering every auth call 200 with Reaper-Access: allow and nothing
// else, in one process (master_process off), asked by the same Caddy recipe.
// The bare Go server is the floor of any Go HTTP auth server; nginx says what
// a call costs the best C server on the same machine: the system calls and
// wake-ups of a request over loopback, which no server avoids. Without nginx
// the part prints that it was not there and measures the rest.

// nginxAuthConfig is that server: prefix dir, listening on addr.
func nginxAuthConfig(dir, addr string) string {
	return fmt.Sprintf(`daemon off;
master_process off;
worker_processes 1;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log;
events { worker_connections 4096; }
http {
	access_log off;
	client_body_temp_path %[1]s/body;
	proxy_temp_path %[1]s/proxy;
	fastcgi_temp_path %[1]s/fastcgi;
	uwsgi_temp_path %[1]s/uwsgi;
	scgi_temp_path %[1]s/scgi;
	keepalive_requests 1000000;
	server {
		listen %[2]s;
		location / {
			add_header Reaper-Access allow;
			return 200;
		}
	}
}
`, dir, addr)
}

// startNginxAuth starts nginx as the C floor, if there is one on PATH (or in
// /usr/sbin, where Debian puts it); nil without.
func startNginxAuth(ctx context.Context, e *env) (*bareProxy, error) {
	bin, err := exec.LookPath("nginx")
	if err != nil {
		if bin, err = exec.LookPath("/usr/sbin/nginx"); err != nil {
			e.progressf("J: no nginx (apt-get install nginx-light): its floor is left out")
			return nil, nil
		}
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(e.tmp, "nginx-auth")
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, err
	}
	conf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(conf, []byte(nginxAuthConfig(dir, addr)), 0o644); err != nil {
		return nil, err
	}
	p, err := clusterenv.StartProcess(e.clean, "nginx auth", []string{bin, "-p", dir, "-c", conf}, nil, filepath.Join(dir, "nginx.log"))
	if err != nil {
		return nil, err
	}
	if err := awaitListening(ctx, addr, clusterenv.StartTimeout); err != nil {
		return nil, fmt.Errorf("bench: J: nginx: %w", err)
	}
	return &bareProxy{Process: p, addr: addr}, nil
}
