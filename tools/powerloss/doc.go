// Package powerloss is a FUSE file system that loses, on demand, what a
// disk loses when the power goes: it is how nmhost's audit trail is
// tested against power loss (docs/permissions.md, "Durability").
//
// The kernel the project is tested on has no device-mapper (no
// dm-log-writes, no dm-flakey), so the layer is FUSE, which the same
// kernel does have. It passes a working tree through (the page cache:
// every write, synced or not, which the processes on the mount read back)
// and keeps a backing directory, Disk, that holds only what has been
// synced. Layer.PowerLoss stops everything reaching Disk, unmounts and
// throws the working tree away; Disk is then what the machine would find
// after it boots.
//
// What it models:
//   - A file's data (writes, truncation, its size) reaches Disk only when
//     that file is fsynced or fdatasynced, through any of its handles;
//     the data of other files does not.
//   - Namespace changes (create, mkdir, unlink, rmdir, rename, link,
//     symlink, chmod) are journalled in order and reach Disk, all of them
//     in that order, at the next fsync of any file or directory, as a
//     journalling file system (ext4, XFS) commits its journal. A file
//     system that needs the directory itself fsynced is stricter than
//     this.
//   - What reached Disk stays: synced writes are never reordered or
//     undone.
//
// What it does not model: torn or partly written sectors (a write is
// lost or kept whole), a disk that lies about fsync (except on purpose,
// LieAboutSync, to show a kept checkpoint catches what such a disk
// loses), data of a file reaching the disk early through writeback
// (which only ever helps), fallocate and copy_file_range (refused), and
// file locks across machines (locks stay in the kernel, which is one
// machine). FUSE passthrough is turned off for every file, or the kernel
// would write behind the layer's back.
package powerloss
