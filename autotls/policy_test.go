package autotls

import (
	"slices"
	"testing"
)

func TestPolicy_ManagedAreTheExactHosts(t *testing.T) {
	p := NewPolicy([]string{"A.test", "b.test/api", "*.wild.test", "*", "127.0.0.1", "[::1]", "hello.localhost", "a.test"}, nil)
	if got := p.Managed(); !slices.Equal(got, []string{"a.test", "b.test"}) {
		t.Errorf("Managed = %q, want a.test and b.test", got)
	}
	if got := p.Skipped(); !slices.Equal(got, []string{"127.0.0.1", "[::1]", "hello.localhost"}) {
		t.Errorf("Skipped = %q", got)
	}
}

func TestPolicy_Decide(t *testing.T) {
	routes := []string{"a.test", "*.wild.test", "*.other.test/api"}
	none := NewPolicy(routes, nil)
	allowOnly := NewPolicy(routes, &OnDemandRules{Allow: []string{"*.wild.test", "x.other.test"}})
	askOnly := NewPolicy(routes, &OnDemandRules{Ask: true})
	both := NewPolicy(routes, &OnDemandRules{Ask: true, Allow: []string{"*.wild.test"}})
	catchAll := NewPolicy([]string{"*"}, &OnDemandRules{Ask: true})
	cases := []struct {
		p    *Policy
		name string
		want Verdict
		why  string
	}{
		{none, "a.test", Managed, ""},
		{none, "A.TEST.", Managed, ""},
		{none, "", Refuse, "the client sent no server name (SNI)"},
		{none, "b.test", Refuse, "not a host of the routes"},
		{none, "x.wild.test", Refuse, "it matches only a wildcard route, and node.tls.acme.on_demand is not set"},
		{none, "wild.test", Refuse, "not a host of the routes"}, // *.wild.test does not take wild.test
		{allowOnly, "x.wild.test", OnDemand, ""},
		{allowOnly, "a.b.wild.test", OnDemand, ""},
		{allowOnly, "x.other.test", OnDemand, ""},
		{allowOnly, "y.other.test", Refuse, "not in node.tls.acme.on_demand.allow"},
		{allowOnly, "evil.test", Refuse, "not a host of the routes"},
		{askOnly, "y.other.test", Ask, ""},
		{askOnly, "a.test", Managed, ""},
		{both, "x.wild.test", Ask, ""},
		{both, "y.other.test", Refuse, "not in node.tls.acme.on_demand.allow"},
		{catchAll, "anything.example", Ask, ""},
		{catchAll, "bad name!", Refuse, "not a DNS name"},
		{catchAll, "a..b", Refuse, "not a DNS name"},
	}
	for _, c := range cases {
		got, why := c.p.Decide(c.name)
		if got != c.want || why != c.why {
			t.Errorf("Decide(%q) = %v %q, want %v %q", c.name, got, why, c.want, c.why)
		}
	}
}
