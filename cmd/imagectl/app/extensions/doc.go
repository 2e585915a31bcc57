// Package extensions is imagectl extensions: fetch, layout, ls and pin over the
// extensions library, its cache and the gallery clients.
package extensions
