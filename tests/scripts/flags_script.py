"""A flags-driven TF 1.x script (tf.app.flags, tf.app.run, tf.logging), run under nbdist or --tf."""

import json
import sys

if "--tf" in sys.argv:
    sys.argv.remove("--tf")
    import tensorflow.compat.v1 as tf
else:
    import nbdist as tf
flags = tf.app.flags
flags.DEFINE_string("ps_hosts", "localhost:2222", "ps hosts")
flags.DEFINE_string("worker_hosts", "", "worker hosts")
flags.DEFINE_string("job_name", None, "job name")
flags.DEFINE_integer("task_index", 0, "task index")
flags.DEFINE_float("learning_rate", 0.01, "lr")
flags.DEFINE_boolean("sync_replicas", False, "sync")
flags.DEFINE_list("layers", "8,4", "sizes")
FLAGS = flags.FLAGS


def main(argv):
    tf.logging.set_verbosity(tf.logging.INFO)
    print(
        json.dumps(
            {
                "job": FLAGS.job_name,
                "task": FLAGS.task_index,
                "ps": FLAGS.ps_hosts.split(","),
                "workers": FLAGS.worker_hosts.split(","),
                "lr": FLAGS.learning_rate,
                "sync": FLAGS.sync_replicas,
                "layers": FLAGS.layers,
                "argv": argv[1:],
            }
        )
    )


if __name__ == "__main__":
    tf.app.run()
