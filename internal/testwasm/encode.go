package testwasm

// The pieces of the WebAssembly binary format that tests use to write
// modules by hand, hostile ones included: one encoder for every package's
// tests.

// ULEB128 encodes v as an unsigned LEB128.
func ULEB128(v uint32) []byte {
	var out []byte
	for {
		b := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			out = append(out, b|0x80)
			continue
		}
		return append(out, b)
	}
}

// SLEB128 encodes v as a signed LEB128.
func SLEB128(v int32) []byte {
	var out []byte
	for {
		b := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && b&0x40 == 0) || (v == -1 && b&0x40 != 0) {
			return append(out, b)
		}
		out = append(out, b|0x80)
	}
}

// Name encodes a name: its length, then its bytes.
func Name(s string) []byte { return append(ULEB128(uint32(len(s))), s...) }

// Vec encodes a vector: its length, then its items as they are.
func Vec(items [][]byte) []byte {
	out := ULEB128(uint32(len(items)))
	for _, it := range items {
		out = append(out, it...)
	}
	return out
}

// Section encodes a section: its id, its size, then content.
func Section(id byte, content []byte) []byte {
	return append(append([]byte{id}, ULEB128(uint32(len(content)))...), content...)
}
