// Package adminpolicy reads the administrator's policy: the machine's
// file in the operating system's admin location, trusted only when only
// an administrator could have written it, and the same schema from the
// extension's managed storage.
package adminpolicy
