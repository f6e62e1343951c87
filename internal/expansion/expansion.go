// Package expansion expands $(VAR) references the way kubelet does for
// command, args and subPathExpr: "$$" is a literal "$", "$(NAME)" is
// replaced by mapping(NAME), and anything else, including an unterminated
// "$(", is copied unchanged.
package expansion

import "strings"

// Expand expands input with mapping.
func Expand(input string, mapping func(string) string) string {
	if !strings.Contains(input, "$") {
		return input
	}
	var b strings.Builder
	b.Grow(len(input))
	for i := 0; i < len(input); i++ {
		if input[i] != '$' || i+1 >= len(input) {
			b.WriteByte(input[i])
			continue
		}
		switch next := input[i+1]; {
		case next == '$':
			b.WriteByte('$')
			i++
		case next == '(':
			end := strings.IndexByte(input[i+2:], ')')
			if end < 0 {
				b.WriteString(input[i:])
				return b.String()
			}
			b.WriteString(mapping(input[i+2 : i+2+end]))
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

// MappingFor returns a mapping that looks names up in the maps in order
// and, for a name in none of them, gives back "$(NAME)" unchanged, as
// kubelet does for command and args.
func MappingFor(maps ...map[string]string) func(string) string {
	return func(name string) string {
		for _, m := range maps {
			if v, ok := m[name]; ok {
				return v
			}
		}
		return "$(" + name + ")"
	}
}
