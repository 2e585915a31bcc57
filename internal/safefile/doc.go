// Package safefile reads the files imagectl is given by path (matrix.yaml,
// catalog.json, keys, password files, SBOMs) without trusting what the path
// names.
//
// A path may name a FIFO, a device such as /dev/zero, a socket, a directory
// or a multi-gigabyte sparse file. Open opens it without blocking
// (O_NONBLOCK, so a FIFO with no writer cannot hang the open), checks with
// fstat on the opened descriptor (no race with a rename) that it is a
// regular file, and rejects anything else. ReadFile then reads through a
// bounded reader: a file larger than the caller's limit is rejected before
// it is read (by its size) and while it is read (in case it grows), with an
// error naming the file and the limit. NoFollow additionally refuses a
// symbolic link as the last path element (O_NOFOLLOW), for caches whose
// entries are never links.
package safefile
