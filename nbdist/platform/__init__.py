"""Program scaffolding TF 1.x scripts stand on: `tf.app`, `tf.flags`, `tf.logging`."""
