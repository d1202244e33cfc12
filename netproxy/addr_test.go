package netproxy

import (
	"net/netip"
	"testing"
)

func TestClassifyAddr(t *testing.T) {
	tests := []struct {
		addr string
		want AddrClass
	}{
		// IPv4 special-purpose registry.
		{"0.0.0.0", AddrUnspecified},
		{"0.1.2.3", AddrUnspecified},
		{"10.0.0.1", AddrPrivate},
		{"10.255.255.255", AddrPrivate},
		{"100.64.0.1", AddrPrivate},
		{"100.127.255.255", AddrPrivate},
		{"100.128.0.0", AddrPublic},
		{"127.0.0.1", AddrLoopback},
		{"127.255.0.9", AddrLoopback},
		{"169.254.0.1", AddrLinkLocal},
		{"169.254.169.254", AddrMetadata},
		{"169.254.170.2", AddrMetadata},
		{"172.16.0.1", AddrPrivate},
		{"172.31.255.255", AddrPrivate},
		{"172.32.0.0", AddrPublic},
		{"192.0.0.1", AddrReserved},
		{"192.0.0.192", AddrMetadata},
		{"192.0.2.1", AddrReserved},
		{"192.88.99.1", AddrReserved},
		{"192.168.1.1", AddrPrivate},
		{"198.18.0.1", AddrReserved},
		{"198.19.255.255", AddrReserved},
		{"198.20.0.0", AddrPublic},
		{"198.51.100.7", AddrReserved},
		{"203.0.113.9", AddrReserved},
		{"224.0.0.1", AddrMulticast},
		{"239.255.255.250", AddrMulticast},
		{"240.0.0.1", AddrReserved},
		{"255.255.255.254", AddrReserved},
		{"255.255.255.255", AddrBroadcast},
		{"8.8.8.8", AddrPublic},
		{"1.1.1.1", AddrPublic},
		{"100.100.100.200", AddrMetadata},
		{"168.63.129.16", AddrMetadata},
		{"168.63.129.17", AddrPublic},
		// IPv6 special-purpose registry.
		{"::", AddrUnspecified},
		{"::1", AddrLoopback},
		{"::ffff:127.0.0.1", AddrLoopback},
		{"::ffff:10.1.2.3", AddrPrivate},
		{"::ffff:169.254.169.254", AddrMetadata},
		{"::ffff:8.8.8.8", AddrPublic},
		{"::127.0.0.1", AddrLoopback},                          // IPv4-compatible
		{"::8.8.8.8", AddrReserved},                            // IPv4-compatible, deprecated
		{"::169.254.169.254", AddrMetadata},                    // IPv4-compatible
		{"64:ff9b::7f00:1", AddrLoopback},                      // NAT64 of 127.0.0.1
		{"64:ff9b::a9fe:a9fe", AddrMetadata},                   // NAT64 of 169.254.169.254
		{"64:ff9b::808:808", AddrPublic},                       // NAT64 of 8.8.8.8
		{"64:ff9b:1::808:808", AddrPrivate},                    // local-use NAT64
		{"64:ff9b:1::a00:1", AddrPrivate},                      // local-use NAT64 of 10.0.0.1
		{"100::1", AddrReserved},                               // discard-only
		{"2001::1", AddrReserved},                              // Teredo
		{"2001:0:4136:e378:8000:63bf:3fff:fdd2", AddrReserved}, // Teredo, public client
		{"2001:0:4136:e378:8000:63bf:5601:5601", AddrMetadata}, // Teredo client = ^0x5601_5601 = 169.254.169.254 (inverted)
		{"2001:0:a9fe:a9fe::1", AddrMetadata},                  // Teredo server 169.254.169.254
		{"2001:2::1", AddrReserved},                            // benchmarking
		{"2001:10::1", AddrReserved},                           // ORCHID
		{"2001:db8::1", AddrReserved},                          // documentation
		{"3fff::1", AddrReserved},                              // documentation (2024)
		{"2002:7f00:1::1", AddrLoopback},                       // 6to4 of 127.0.0.1
		{"2002:a9fe:a9fe::1", AddrMetadata},                    // 6to4 of 169.254.169.254
		{"2002:c0a8:101::1", AddrPrivate},                      // 6to4 of 192.168.1.1
		{"2002:808:808::1", AddrPublic},                        // 6to4 of 8.8.8.8
		{"fc00::1", AddrPrivate},
		{"fd12:3456::1", AddrPrivate},
		{"fd00:ec2::254", AddrMetadata},
		{"fe80::1", AddrLinkLocal},
		{"febf::1", AddrLinkLocal},
		{"fec0::1", AddrReserved},
		{"ff02::1", AddrMulticast},
		{"5f00::1", AddrReserved},
		{"4000::1", AddrReserved}, // outside 2000::/3
		{"2606:4700:4700::1111", AddrPublic},
		{"2001:4860:4860::8888", AddrPublic},
		{"2001:3::1", AddrPublic}, // AMT, globally reachable
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			if got := ClassifyAddr(netip.MustParseAddr(tt.addr)); got != tt.want {
				t.Fatalf("ClassifyAddr(%s) = %s, want %s", tt.addr, got, tt.want)
			}
		})
	}
	t.Run("zone", func(t *testing.T) {
		if got := ClassifyAddr(netip.MustParseAddr("fe80::1%eth0")); got != AddrInvalid {
			t.Fatalf("zoned address classed %s", got)
		}
	})
	t.Run("zero", func(t *testing.T) {
		if got := ClassifyAddr(netip.Addr{}); got != AddrInvalid {
			t.Fatalf("zero address classed %s", got)
		}
	})
}

func TestAddrClassPolicy(t *testing.T) {
	for c := AddrInvalid; c <= AddrMetadata; c++ {
		t.Run(c.String(), func(t *testing.T) {
			public, listed := c.allowedWith(false), c.allowedWith(true)
			switch c {
			case AddrPublic:
				if !public || !listed {
					t.Fatal("public must be allowed")
				}
			case AddrLoopback, AddrPrivate, AddrLinkLocal, AddrReserved:
				if public || !listed {
					t.Fatalf("%s: unlisted %v listed %v; want only listed", c, public, listed)
				}
			default:
				if public || listed {
					t.Fatalf("%s must never be allowed", c)
				}
			}
		})
	}
}
