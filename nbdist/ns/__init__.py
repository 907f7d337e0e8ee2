"""TF 1.x's namespaces of other modules' names: `tf.math`, `tf.linalg`, `tf.random`,
`tf.initializers`, `tf.io`. Each module maps TF's names at that path to nbdist's functions (a
name at two paths in TF is one function here); a name it lacks raises the facade's
`AttributeError`. (A package, so that ``math`` / ``random`` / ``io`` never shadow the standard
library's modules of those names.)"""
