package cache

// SetAfterCorruptHash sets a hook run after a blob was found corrupt and
// before it is removed, to play a concurrent writer at that moment.
func SetAfterCorruptHash(c *Cache, f func(path string)) { c.afterCorruptHash = f }
