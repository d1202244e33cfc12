package netproxy

import (
	"net/netip"
)

// AddrClass is what an address is, by the IANA IPv4 and IPv6
// special-purpose address registries (plus known cloud metadata services).
type AddrClass uint8

const (
	AddrInvalid     AddrClass = iota // the zero netip.Addr, or an address with a zone
	AddrPublic                       // globally reachable unicast
	AddrLoopback                     // 127/8, ::1
	AddrPrivate                      // RFC 1918, shared CGNAT space 100.64/10, ULA fc00::/7
	AddrLinkLocal                    // 169.254/16, fe80::/10
	AddrReserved                     // documentation, benchmarking, protocol assignments, 240/4, Teredo, ...
	AddrUnspecified                  // 0.0.0.0/8, ::
	AddrMulticast                    // 224/4, ff00::/8
	AddrBroadcast                    // 255.255.255.255
	AddrMetadata                     // cloud instance metadata services
)

var addrClassNames = [...]string{
	AddrInvalid:     "invalid",
	AddrPublic:      "public",
	AddrLoopback:    "loopback",
	AddrPrivate:     "private",
	AddrLinkLocal:   "link-local",
	AddrReserved:    "reserved",
	AddrUnspecified: "unspecified",
	AddrMulticast:   "multicast",
	AddrBroadcast:   "broadcast",
	AddrMetadata:    "cloud-metadata",
}

func (c AddrClass) String() string {
	if int(c) < len(addrClassNames) {
		return addrClassNames[c]
	}
	return "invalid"
}

func (c AddrClass) describe() string {
	if c == AddrInvalid || c == AddrUnspecified {
		return "an " + c.String() + " address"
	}
	return "a " + c.String() + " address"
}

// neverWhy explains, for the classes no entry unlocks, why listing the
// address does not help, so that a person who listed one learns what to
// write instead.
func (c AddrClass) neverWhy() string {
	switch c {
	case AddrUnspecified:
		return ", even when listed: it is not a destination, and a connection to it reaches this machine itself on Linux and macOS; list 127.0.0.1 or [::1] to reach this machine"
	case AddrBroadcast:
		return ", even when listed: it is not a destination a TCP connection can be made to"
	case AddrMulticast:
		return ", even when listed: multicast is not a destination a TCP connection can be made to"
	case AddrMetadata:
		return ", even when listed: it serves this machine's cloud credentials"
	}
	return ""
}

// allowedWith says whether an address of this class may be contacted.
// Public addresses always may. Loopback, private, link-local and reserved
// ones only when the ACL lists the literal (or localhost) by itself. The
// rest never: metadata services hold credentials for the machine itself
// (denied even when listed, so that a profile cannot be written to reach
// them), and unspecified, multicast and broadcast are not destinations (a
// connect to 0.0.0.0 reaches the local host).
func (c AddrClass) allowedWith(listedLiteral bool) bool {
	switch c {
	case AddrPublic:
		return true
	case AddrLoopback, AddrPrivate, AddrLinkLocal, AddrReserved:
		return listedLiteral
	}
	return false
}

type classRange struct {
	p netip.Prefix
	c AddrClass
}

func mustPrefix(s string) netip.Prefix { return netip.MustParsePrefix(s) }

// metadataAddrs are instance-metadata and host-agent endpoints: AWS
// (IMDS, ECS task and EKS pod identity agents, IPv4 and IPv6), GCP and Azure
// IMDS (169.254.169.254), Azure WireServer, Alibaba Cloud, Oracle Cloud's
// legacy endpoint.
var metadataAddrs = map[netip.Addr]bool{
	netip.MustParseAddr("169.254.169.254"): true,
	netip.MustParseAddr("169.254.170.2"):   true,
	netip.MustParseAddr("169.254.170.23"):  true,
	netip.MustParseAddr("fd00:ec2::254"):   true,
	netip.MustParseAddr("fd00:ec2::23"):    true,
	netip.MustParseAddr("168.63.129.16"):   true,
	netip.MustParseAddr("100.100.100.200"): true,
	netip.MustParseAddr("192.0.0.192"):     true,
}

// ipv4Special is the IANA IPv4 Special-Purpose Address Registry, with the
// blocks' classes. Blocks the registry marks globally reachable (e.g.
// 192.31.196/24 AS112) are left out and count as public.
var ipv4Special = []classRange{
	{mustPrefix("0.0.0.0/8"), AddrUnspecified},        // "this network" (RFC 791)
	{mustPrefix("10.0.0.0/8"), AddrPrivate},           // RFC 1918
	{mustPrefix("100.64.0.0/10"), AddrPrivate},        // shared address space, CGNAT (RFC 6598)
	{mustPrefix("127.0.0.0/8"), AddrLoopback},         // RFC 1122
	{mustPrefix("169.254.0.0/16"), AddrLinkLocal},     // RFC 3927
	{mustPrefix("172.16.0.0/12"), AddrPrivate},        // RFC 1918
	{mustPrefix("192.0.0.0/24"), AddrReserved},        // IETF protocol assignments (RFC 6890)
	{mustPrefix("192.0.2.0/24"), AddrReserved},        // TEST-NET-1 documentation (RFC 5737)
	{mustPrefix("192.88.99.0/24"), AddrReserved},      // deprecated 6to4 relay anycast (RFC 7526)
	{mustPrefix("192.168.0.0/16"), AddrPrivate},       // RFC 1918
	{mustPrefix("198.18.0.0/15"), AddrReserved},       // benchmarking (RFC 2544)
	{mustPrefix("198.51.100.0/24"), AddrReserved},     // TEST-NET-2 (RFC 5737)
	{mustPrefix("203.0.113.0/24"), AddrReserved},      // TEST-NET-3 (RFC 5737)
	{mustPrefix("224.0.0.0/4"), AddrMulticast},        // RFC 5771
	{mustPrefix("255.255.255.255/32"), AddrBroadcast}, // limited broadcast (RFC 919)
	{mustPrefix("240.0.0.0/4"), AddrReserved},         // reserved (RFC 1112)
}

// ipv6Special is the IANA IPv6 Special-Purpose Address Registry, minus the
// blocks that embed an IPv4 address (handled in classify6) and the few
// globally reachable ones. Order matters: the first match wins.
var ipv6Special = []classRange{
	{mustPrefix("::/128"), AddrUnspecified},
	{mustPrefix("::1/128"), AddrLoopback},
	{mustPrefix("100::/64"), AddrReserved},       // discard-only (RFC 6666)
	{mustPrefix("100:0:0:1::/64"), AddrReserved}, // dummy prefix (RFC 9780)
	{mustPrefix("2001:db8::/32"), AddrReserved},  // documentation (RFC 3849)
	{mustPrefix("3fff::/20"), AddrReserved},      // documentation (RFC 9637)
	{mustPrefix("2001:3::/32"), AddrPublic},      // AMT (RFC 7450), globally reachable
	{mustPrefix("2001:4:112::/48"), AddrPublic},  // AS112-v6, globally reachable
	{mustPrefix("2001::/23"), AddrReserved},      // IETF protocol assignments, incl. Teredo, ORCHID, benchmarking
	{mustPrefix("5f00::/16"), AddrReserved},      // SRv6 SIDs (RFC 9602)
	{mustPrefix("fc00::/7"), AddrPrivate},        // unique local (RFC 4193)
	{mustPrefix("fe80::/10"), AddrLinkLocal},     // RFC 4291
	{mustPrefix("fec0::/10"), AddrReserved},      // deprecated site-local (RFC 3879)
	{mustPrefix("ff00::/8"), AddrMulticast},      // RFC 4291
}

var (
	v4compat  = mustPrefix("::/96")          // deprecated IPv4-compatible (RFC 4291)
	nat64     = mustPrefix("64:ff9b::/96")   // well-known NAT64 prefix (RFC 6052)
	nat64Loc  = mustPrefix("64:ff9b:1::/48") // local-use NAT64 (RFC 8215)
	teredo    = mustPrefix("2001::/32")      // RFC 4380
	sixToFour = mustPrefix("2002::/16")      // RFC 3056
	global6   = mustPrefix("2000::/3")       // the only allocated global unicast space
)

// ClassifyAddr says what an address is. IPv4-mapped IPv6 addresses are
// classified as the IPv4 address they carry; the other formats that embed
// an IPv4 address (IPv4-compatible, NAT64, 6to4, Teredo) are classified by
// the worse of their own class and the embedded address's, so that no
// private or metadata address can be reached through a translator.
func ClassifyAddr(a netip.Addr) AddrClass {
	if !a.IsValid() || a.Zone() != "" {
		return AddrInvalid
	}
	a = a.Unmap()
	if a.Is4() {
		return classify4(a)
	}
	return classify6(a)
}

func classify4(a netip.Addr) AddrClass {
	if metadataAddrs[a] {
		return AddrMetadata
	}
	for _, r := range ipv4Special {
		if r.p.Contains(a) {
			return r.c
		}
	}
	return AddrPublic
}

// embedded4 extracts 32 bits of a at byte offset off as an IPv4 address.
func embedded4(a netip.Addr, off int) netip.Addr {
	b := a.As16()
	return netip.AddrFrom4([4]byte{b[off], b[off+1], b[off+2], b[off+3]})
}

func classify6(a netip.Addr) AddrClass {
	if metadataAddrs[a] {
		return AddrMetadata
	}
	switch {
	case a == netip.IPv6Unspecified():
		return AddrUnspecified
	case a == netip.IPv6Loopback():
		return AddrLoopback
	case v4compat.Contains(a):
		return worst(AddrReserved, classify4(embedded4(a, 12)))
	case nat64.Contains(a):
		// A translator reaches the embedded address on our behalf: the
		// address is exactly as public as the one it embeds.
		return classify4(embedded4(a, 12))
	case nat64Loc.Contains(a):
		return worst(AddrPrivate, classify4(embedded4(a, 12)))
	case teredo.Contains(a):
		// Teredo carries the server at bits 32..63 and the client,
		// inverted, in the last 32 bits. Refused anyway (reserved), but
		// a metadata address inside still makes it metadata.
		b := a.As16()
		client := netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]})
		if classify4(embedded4(a, 4)) == AddrMetadata || classify4(client) == AddrMetadata {
			return AddrMetadata
		}
		return AddrReserved
	case sixToFour.Contains(a):
		return classify4(embedded4(a, 2))
	}
	for _, r := range ipv6Special {
		if r.p.Contains(a) {
			return r.c
		}
	}
	if !global6.Contains(a) {
		return AddrReserved // unallocated by IANA
	}
	return AddrPublic
}

// severity orders classes from most to least permissive, for worst().
var severity = [...]int{
	AddrPublic:      0,
	AddrReserved:    1,
	AddrPrivate:     2,
	AddrLinkLocal:   3,
	AddrLoopback:    4,
	AddrMulticast:   5,
	AddrBroadcast:   5,
	AddrUnspecified: 6,
	AddrInvalid:     7,
	AddrMetadata:    8,
}

func worst(a, b AddrClass) AddrClass {
	if severity[b] > severity[a] {
		return b
	}
	return a
}
