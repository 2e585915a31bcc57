package resolve

import "github.com/imagectl/imagectl/catalog"

// pythonSatisfies is catalog.PythonSatisfies: catalog.Load rejects a
// requires-python it cannot parse, so resolution and loading agree.
func pythonSatisfies(spec, py string) (bool, error) { return catalog.PythonSatisfies(spec, py) }
