package conf

import "testing"

func TestValidEnvName(t *testing.T) {
	for s, want := range map[string]bool{
		"HOME": true, "_": true, "a_1": true, "PATH2": true,
		"": false, "1A": false, "A-B": false, "A B": false, "É": false, "A=": false,
	} {
		if got := ValidEnvName(s); got != want {
			t.Errorf("ValidEnvName(%q) = %v, want %v", s, got, want)
		}
	}
}
