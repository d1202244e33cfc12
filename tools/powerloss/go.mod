module github.com/agentgate/nmhost/tools/powerloss

go 1.26.8

require golang.org/x/sys v0.49.0

require github.com/hanwen/go-fuse/v2 v2.12.1

replace github.com/agentgate/nmhost => ../..
