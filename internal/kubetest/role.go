package kubetest

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"testing"

	"go.yaml.in/yaml/v3"
	rbacv1 "k8s.io/api/rbac/v1"
)

// RoleFromFile reads the first Role of a YAML file of several documents
// (examples/kubernetes/rbac.yaml: the rights the docs tell operators to give).
func RoleFromFile(t testing.TB, path string) *rbacv1.Role {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for {
		var doc map[string]any
		if err := dec.Decode(&doc); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("kubetest: %s: %v", path, err)
		}
		if doc["kind"] != "Role" {
			continue
		}
		j, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		var r rbacv1.Role
		if err := json.Unmarshal(j, &r); err != nil {
			t.Fatalf("kubetest: %s: %v", path, err)
		}
		return &r
	}
	t.Fatalf("kubetest: no Role in %s", path)
	return nil
}
