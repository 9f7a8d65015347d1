package clevercloud

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/reapergw/reaper/internal/conf"
	"github.com/reapergw/reaper/paas"
	"github.com/reapergw/reaper/paas/clevercloud/fakeclever"
)

func TestNormalizeHost(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"shop.example.com", "shop.example.com"},
		{"Shop.Example.COM", "shop.example.com"},
		{"shop.example.com:8443", "shop.example.com"},
		{"shop.example.com.", "shop.example.com"},
		{"SHOP.example.com.:443", "shop.example.com"},
		{"shop.example.com:", "shop.example.com"},
		{"example.com/api", "example.com"},
		{"example.com/api/", "example.com"},
		{"example.com/", "example.com"},
		{"example.com:8080/api", "example.com"},
		{"https://Example.com:8443/x?y", "example.com"},
		{"  example.com  ", "example.com"},
		{"[2001:DB8::1]:8080", "[2001:db8::1]"},
		{"[2001:db8:0:0::1]", "[2001:db8::1]"},
		{"2001:db8::1", "[2001:db8::1]"},
		{"[::1]", "[::1]"},
		{"192.0.2.7:80", "192.0.2.7"},
		{"", ""},
		{"   ", ""},
		{":8080", ""},
		{"/api", ""},
	} {
		if got := NormalizeHost(tc.in); got != tc.want {
			t.Errorf("NormalizeHost(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestVHostIndex_NeedRead(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	known := map[string][]vhostApp{"a.example": {{id: "app_a"}}}
	for _, tc := range []struct {
		name   string
		index  map[string][]vhostApp
		age    time.Duration
		hosts  []string
		expect bool
	}{
		{"never read", nil, 0, []string{"a.example"}, true},
		{"known, fresh", known, time.Second, []string{"a.example"}, false},
		{"missing, within refresh", known, 10 * time.Second, []string{"b.example"}, false},
		{"missing, refresh passed", known, 30 * time.Second, []string{"b.example"}, true},
		{"known, refresh passed", known, 30 * time.Second, []string{"a.example"}, false},
		{"one of two missing", known, time.Minute, []string{"a.example", "b.example"}, true},
		{"known, too old", known, 5 * time.Minute, []string{"a.example"}, true},
	} {
		x := vhostIndex{maxAge: 5 * time.Minute, refresh: 30 * time.Second, byHost: tc.index, readAt: t0}
		if got := x.needRead(tc.hosts, t0.Add(tc.age)); got != tc.expect {
			t.Errorf("%s: needRead = %v, want %v", tc.name, got, tc.expect)
		}
	}
}

func TestClient_FindApp(t *testing.T) {
	e := newEnv(t, fakeclever.Options{}, nil)
	shop := e.f.AddApp(fakeclever.App{Owner: orga, Name: "shop", VHosts: []string{"Shop.Example.com", "www.shop.example.com"}})
	api := e.f.AddApp(fakeclever.App{Owner: user, Name: "api", VHosts: []string{"example.com/api"}})
	web := e.f.AddApp(fakeclever.App{Owner: "orga_other", Name: "web", VHosts: []string{"mixed.example.com/web"}})
	docs := e.f.AddApp(fakeclever.App{Owner: orga, Name: "docs", VHosts: []string{"mixed.example.com/docs"}})
	ctx := context.Background()

	for _, tc := range []struct {
		domains []string
		want    string
	}{
		{[]string{"shop.example.com"}, shop.ID},
		{[]string{"SHOP.example.com.:8443"}, shop.ID},
		{[]string{"shop.example.com/cart", "www.shop.example.com"}, shop.ID},
		{[]string{"*.example.com", "unknown.example.com", "shop.example.com"}, shop.ID},
		{[]string{"example.com"}, api.ID},
		{[]string{"example.com/anything"}, api.ID},
		{[]string{fakeclever.DefaultDomain(web.ID)}, web.ID},
	} {
		if got, err := e.c.FindApp(ctx, tc.domains); err != nil || got != tc.want {
			t.Errorf("FindApp(%v) = %q, %v; want %q", tc.domains, got, err, tc.want)
		}
	}
	// The apps' vhosts were listed once, one call per owner, and the owners learnt.
	if got := e.calls("/applications"); len(got) != 3 {
		t.Errorf("list calls %v, want one per owner", got)
	}
	if owner, _ := e.c.owners.get(api.ID); owner != user {
		t.Errorf("owner of %s = %q, want %s", api.ID, owner, user)
	}

	for _, tc := range []struct {
		domains  []string
		sentinel error
		says     []string
	}{
		{[]string{"mixed.example.com"}, ErrAmbiguousHost, []string{"mixed.example.com", web.ID + " (web)", docs.ID + " (docs)", "set app_id"}},
		{[]string{"shop.example.com", "example.com"}, ErrAmbiguousHost, []string{shop.ID + " (shop)", api.ID + " (api)", "one app"}},
		{[]string{"nobody.example.com"}, paas.ErrNotFound, []string{"nobody.example.com: not a vhost of any app"}},
		{[]string{"*.example.com", "*"}, paas.ErrNotFound, []string{"no exact domain"}},
		{nil, paas.ErrNotFound, []string{"no exact domain"}},
	} {
		_, err := e.c.FindApp(ctx, tc.domains)
		if !errors.Is(err, tc.sentinel) {
			t.Errorf("FindApp(%v): %v, want %v", tc.domains, err, tc.sentinel)
			continue
		}
		if n := strings.Count(err.Error(), "clevercloud:"); n != 1 {
			t.Errorf("FindApp(%v): %q says clevercloud: %d times, want once (the sentinel's words are not repeated)", tc.domains, err, n)
		}
		for _, s := range tc.says {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("FindApp(%v): %q does not say %q", tc.domains, err, s)
			}
		}
	}
}

// TestClient_FindAppRefresh: the list is cached; a missing host causes a new
// listing at most once per VHostRefresh, and a list older than VHostMaxAge is
// read again.
func TestClient_FindAppRefresh(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := fakeclever.New(fakeclever.Options{Token: testToken})
		shop := f.AddApp(fakeclever.App{Owner: orga, Name: "shop", VHosts: []string{"shop.example.com"}})
		c, err := New(Config{Token: conf.Secret(testToken)}, Options{Transport: f.Transport(),
			VHostRefresh: 30 * time.Second, VHostMaxAge: 5 * time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		lists := func() int {
			n := 0
			for _, call := range f.Calls() {
				if strings.HasSuffix(call.Path, "/applications") {
					n++
				}
			}
			return n
		}
		find := func(host string) (string, error) { return c.FindApp(ctx, []string{host}) }

		if id, err := find("shop.example.com"); err != nil || id != shop.ID {
			t.Fatalf("%q, %v", id, err)
		}
		f.AddVHost(shop.ID, "new.example.com")
		for range 10 {
			if _, err := find("new.example.com"); !errors.Is(err, paas.ErrNotFound) {
				t.Fatalf("a missing host within the refresh: %v", err)
			}
			if _, err := find("shop.example.com"); err != nil {
				t.Fatal(err)
			}
		}
		if n := lists(); n != 1 {
			t.Fatalf("%d listings within the refresh, want 1", n)
		}
		time.Sleep(30 * time.Second)
		if id, err := find("new.example.com"); err != nil || id != shop.ID {
			t.Fatalf("after the refresh: %q, %v", id, err)
		}
		if n := lists(); n != 2 {
			t.Fatalf("%d listings, want 2", n)
		}
		// A known host does not cause a listing until the list is too old.
		time.Sleep(4 * time.Minute)
		if _, err := find("shop.example.com"); err != nil || lists() != 2 {
			t.Fatalf("within max age: %v, %d listings", err, lists())
		}
		time.Sleep(time.Minute)
		if _, err := find("shop.example.com"); err != nil || lists() != 3 {
			t.Fatalf("past max age: %v, %d listings, want 3", err, lists())
		}
	})
}
