"""What the module's test scripts share: their arguments and raises()."""
import os
import sys


def arguments():
    """(source, cli, scratch, tiny-moe.yaml) from SOURCE_DIR TDMSIM_CLI SCRATCH_DIR."""
    source, cli, scratch = sys.argv[1:4]
    os.makedirs(scratch, exist_ok=True)
    return source, cli, scratch, os.path.join(source, "examples", "c", "tiny-moe.yaml")


def raises(kind, fn, *args, **kwargs):
    """The message of the `kind` exception fn(*args, **kwargs) raises."""
    try:
        fn(*args, **kwargs)
    except kind as e:
        return str(e)
    raise AssertionError(f"{getattr(fn, '__name__', fn)} did not raise {kind.__name__}")
