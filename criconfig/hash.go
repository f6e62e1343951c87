package criconfig

import (
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
)

// HashContainer is kubelet's container hash: FNV-32a over go-spew's "%#v"
// rendering of the JSON of the container's name and image only. For a
// byte slice spew writes "([]uint8)[b0 b1 …]" in decimal. A container
// started by kubelet keeps its hash under podstart, so it is not restarted
// merely by changing agents; and, as in kubelet, only a name or image
// change counts as a change.
//
// It streams the bytes into the hash instead of building the JSON and the
// spew text, so it does not allocate; TestHashContainerJSON checks the
// JSON encoding against encoding/json.
func HashContainer(c *corev1.Container) uint64 {
	h := hasher{sum: offset32}
	h.text("([]uint8)[")
	h.jsonText(`{"image":`)
	h.jsonString(c.Image)
	h.jsonText(`,"name":`)
	h.jsonString(c.Name)
	h.jsonText(`}`)
	h.byte(']')
	return uint64(h.sum)
}

const (
	offset32 = 2166136261
	prime32  = 16777619
)

// hasher is FNV-32a fed the spew rendering of a JSON byte stream.
type hasher struct {
	sum   uint32
	first bool // a JSON byte has been written (spaces separate the next)
}

func (h *hasher) byte(b byte) { h.sum = (h.sum ^ uint32(b)) * prime32 }

func (h *hasher) text(s string) {
	for i := 0; i < len(s); i++ {
		h.byte(s[i])
	}
}

// jsonByte writes one byte of the JSON document as spew shows it: its
// decimal value, space-separated from the previous one.
func (h *hasher) jsonByte(b byte) {
	if h.first {
		h.byte(' ')
	}
	h.first = true
	switch {
	case b >= 100:
		h.byte('0' + b/100)
		h.byte('0' + b/10%10)
	case b >= 10:
		h.byte('0' + b/10)
	}
	h.byte('0' + b%10)
}

func (h *hasher) jsonText(s string) {
	for i := 0; i < len(s); i++ {
		h.jsonByte(s[i])
	}
}

const hexDigits = "0123456789abcdef"

// jsonString encodes s as encoding/json does (HTML-safe escaping, invalid
// UTF-8 as U+FFFD, U+2028 and U+2029 escaped).
func (h *hasher) jsonString(s string) {
	h.jsonByte('"')
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			switch {
			case b == '"' || b == '\\':
				h.jsonByte('\\')
				h.jsonByte(b)
			case b == '\n':
				h.jsonText(`\n`)
			case b == '\r':
				h.jsonText(`\r`)
			case b == '\t':
				h.jsonText(`\t`)
			case b == '\b':
				h.jsonText(`\b`)
			case b == '\f':
				h.jsonText(`\f`)
			case b < 0x20 || b == '<' || b == '>' || b == '&':
				h.jsonText(`\u00`)
				h.jsonByte(hexDigits[b>>4])
				h.jsonByte(hexDigits[b&0xF])
			default:
				h.jsonByte(b)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			h.jsonText(`\ufffd`)
		case r == '\u2028' || r == '\u2029':
			h.jsonText(`\u202`)
			h.jsonByte(hexDigits[r&0xF])
		default:
			h.jsonText(s[i : i+size])
		}
		i += size
	}
	h.jsonByte('"')
}
