"""Two speed-ups for the moto_server the tests start (internal/motoserver,
.ci/moto.sh): Python loads this file at start-up because its folder is put
first on PYTHONPATH. Neither changes what moto answers; both remove work it
repeats for nothing, which on a 2-core CI machine is much of the suite's time
(profiled: docs/local.md).

1. moto finds the service of every request by listing its own package folder
   (os.listdir and an isdir per entry, some 170 system calls) twice per
   request; the folder does not change while the server runs, so the list is
   read once.
2. TransactWriteItems deep-copies the table (to restore it if the
   transaction fails) once per item of the transaction, before any of them
   is applied: the copies are identical, so the first one serves the others.
   A failed transaction is still rolled back to that copy.

A moto whose internals moved (another version) is run as it is: each patch
applies only when what it replaces is found, and says on stderr when it
does not.
"""

import copy
import functools
import sys
import threading


def _say(msg):
    sys.stderr.write("motoserver speedups: " + msg + "\n")


def _cache_module_list():
    try:
        from moto import backends
    except Exception as e:  # not moto's interpreter, or another moto
        _say("moto.backends not found (%s); module list not cached" % e)
        return False
    listing = getattr(backends, "list_of_moto_modules", None)
    if listing is None:
        _say("list_of_moto_modules not found; not cached")
        return False
    modules = functools.lru_cache(maxsize=1)(lambda: tuple(listing()))
    backends.list_of_moto_modules = lambda: modules()
    return True


class _CopyOncePerTransaction:
    """Stands for the copy module inside moto.dynamodb.models: deepcopy of
    a table during one transact_write_items call returns one copy per
    table; everything else is the copy module's."""

    def __init__(self, table_type, local):
        self._table_type = table_type
        self._local = local

    def __getattr__(self, name):
        return getattr(copy, name)

    def deepcopy(self, x, memo=None):
        copies = getattr(self._local, "copies", None)
        if copies is None or memo is not None or not isinstance(x, self._table_type):
            return copy.deepcopy(x, memo)
        c = copies.get(id(x))
        if c is None:
            c = copies[id(x)] = copy.deepcopy(x)
        return c


def _copy_tables_once():
    try:
        import moto.dynamodb.models as models
    except Exception as e:
        _say("moto.dynamodb.models not found (%s); tables copied per item" % e)
        return False
    backend = getattr(models, "DynamoDBBackend", None)
    table = getattr(models, "Table", None)
    transact = getattr(backend, "transact_write_items", None)
    if table is None or transact is None or getattr(models, "copy", None) is not copy:
        _say("DynamoDBBackend.transact_write_items or its copy module not found; tables copied per item")
        return False
    local = threading.local()  # moto serves each request on a thread of its own

    @functools.wraps(transact)
    def transact_write_items(self, *args, **kwargs):
        local.copies = {}
        try:
            return transact(self, *args, **kwargs)
        finally:
            local.copies = None

    models.copy = _CopyOncePerTransaction(table, local)
    backend.transact_write_items = transact_write_items
    return True


_applied = [_cache_module_list(), _copy_tables_once()]
if all(_applied):
    _say("on (module list read once, a table copied once per transaction)")
