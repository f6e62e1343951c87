package expansion

import "testing"

func TestExpand(t *testing.T) {
	t.Parallel()
	env := map[string]string{"A": "a", "B": "b", "EMPTY": ""}
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"$(A)", "a"},
		{"x/$(A)/$(B)", "x/a/b"},
		{"$$(A)", "$(A)"},
		{"$$", "$"},
		{"$(MISSING)", "$(MISSING)"},
		{"$(EMPTY)", ""},
		{"$(A", "$(A"},
		{"a$", "a$"},
		{"$x", "$x"},
		{"$()", "$()"},
		{"$(A$(B))", "$(A$(B))"},
	}
	for _, tt := range tests {
		if got := Expand(tt.in, MappingFor(env)); got != tt.want {
			t.Errorf("Expand(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
