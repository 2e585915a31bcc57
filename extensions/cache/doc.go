// Package cache is a content-addressed store of VSIX files.
//
// Layout under the root directory:
//
//	blobs/sha256/<hex>                         the files, named by digest
//	index/<id>/<version>/<targetPlatform>.json which digest a key resolves to
//
// Every write goes to a temporary file in the destination directory, locked
// with flock while it is written, and is renamed into place, so a reader
// never sees half a file and two processes writing the same blob or index
// entry at once both succeed (the renames are atomic and the contents
// equal); Open removes temporary files an interrupted process left behind
// once they are old and unlocked. Every file is opened without following a
// link or blocking on a FIFO and read only if it is a regular file of
// bounded size. Digests are checked when a blob is written and again
// whenever it is read (a Cache that already hashed a blob skips that only
// while it is the same file, unchanged: same inode, size, modification and
// inode change time, which every write moves); a blob that no longer
// matches its name is removed and reported as missing, never served, and a
// hit's manifest must describe the key it is found under. A hit is
// identified under the archive limits its index entry records when the
// reader's own are smaller, and a blob over the limits either way is not
// served but never removed: a verb run with the default limits (extensions
// ls) keeps what a fetch with raised limits accepted. URLs are stored
// without userinfo.
package cache
