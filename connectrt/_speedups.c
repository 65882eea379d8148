/* connectrt._speedups: a sink batch's records built (and freed) in C, its columns read from the
 * consumed messages in C; a source task's polled list of records checked and its values taken
 * in one C pass.
 *
 * The record classes stay the Python classes of connectrt/api/records.py (slotted dataclasses:
 * their methods, equality, pickling, dataclasses.fields/replace unchanged). What this module
 * replaces is the Python loop that made one record per row of a batch's columns
 * (record_batch._make_records_py), and the Python loop over the messages' timestamps.
 *
 * SlotFiller(cls, slots[, lazy]) finds where each named slot lives in an instance of ``cls``
 * (the offset of the slot's member descriptor, checked to be a writable object slot of that
 * class) and then fills a list of new instances from columns, row by row, without running
 * ``__init__`` (as ``object.__new__`` followed by the slot stores does in Python).
 *
 * Lazy rows (``lazy`` names two more slots of ``cls``: a source and a row): ``fill_lazy`` leaves
 * the slots of the columns not given empty and stores in each instance the batch's LazyColumns
 * and its row. ``descriptors()`` gives one LazySlot per slot, to install on ``cls`` in place of
 * the member descriptors: reading a slot that is empty loads the row's value from its column
 * (the column is made once per batch, by the batch's loader, on the first such read), stores it
 * in the slot and returns it; once every slot of an instance is set, the instance drops its
 * source. Writing behaves as a member descriptor; deleting first loads every empty slot.
 * A task that reads only ``value`` thus never makes the offsets, timestamps, keys or headers.
 *
 * ``plain_values(records)`` (a filler of SourceRecord) walks a source task's polled list once,
 * reading each record's slots by offset: when every record is a SourceRecord to one topic with
 * one timestamp, it gives their topic, timestamp and values, whether they share one source
 * partition, and the indices of the few that cannot be produced alike (a key, headers, an
 * explicit partition, a value that is not bytes), for the sender to produce the others by
 * ``produce_values`` and those one by one (connectrt/runtime/source/sender.py,
 * SourceBatchSender._send_list); else None.
 *
 * ``produce_values(produce, args, values, start[, stop])`` calls ``produce(*args)`` per value,
 * the value in ``args[1]``: Producer.produce's C function called directly with one reused
 * argument tuple (the sender's column and list paths).
 *
 * ``own_constructor(required)`` makes this module build the class's instances when the class
 * itself is called (SourceRecord(...)): its ``tp_vectorcall``, the arguments stored into a new
 * instance's slots, as its __init__ does, without the generic path's argument tuple, keyword
 * dict and Python frame; any other call (a subclass, a call Python refuses) takes that path.
 *
 * ``own_dealloc(slots)`` makes this module free the class's instances (record_dealloc: slots
 * cleared by offset, not CPython's walk over the class hierarchy) and keep up to FREE_RECORDS
 * of them for fill() and the class's own constructor to make the next records of (two
 * classes: SinkRecord and SourceRecord). ``method_column(method, items)`` is
 * ``tuple(map(method, items))`` calling a C method's function directly (librdkafka's Message
 * accessors, read once per message of every batch). ``framed_slices(items, prefix, suffix)``
 * checks and cuts a batch of JSON envelopes of one schema (connectrt/converters/json/converter.py).
 *
 * otlp_sink_batch(...) and otlp_commit_spans(...) are the per-record loops of the trace
 * exporter's OTLP encoder (connectrt/runtime/tracing/otlp_encoding.py, RequestEncoder._sink and
 * _commit): a sink trace record's spans and an offset commit's spans written as protobuf bytes,
 * the same bytes in the same order as the Python loops (kept: the fallback and the tests'
 * oracle); the encoder's caches and its pool of random span ids stay Python objects, passed in.
 * trace_records(...) is the loop before them (connectrt/runtime/tracing/tracer.py, sink_batch):
 * a sink batch's chosen records, their traceparent headers read, made into trace records.
 * otlp_source_batch(...) is a source trace record's loop (RequestEncoder._source), its records'
 * shared parts kept as bytes for their commit as otlp_consumed keeps a sink's.
 * otlp_consumed(...) is both in one pass (RequestEncoder._consumed): a consumed batch's trace
 * record straight to its spans, its traced records never made into Python tuples, their ids
 * drawn from the encoder's pool.
 *
 * Optional: connectrt uses the pure-Python loops when this module is not built.
 * Threads: no state changes outside the GIL (the module's statics included: the classes it
 * frees and their kept records); a SlotFiller is immutable after construction but for its cache
 * of row numbers.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <math.h>

#define MAX_SLOTS 32

/* The slots plain_values() reads, by name (a source record's fields). */
enum {
    P_TOPIC, P_PARTITION, P_KEY_SCHEMA, P_KEY, P_HEADERS, P_TIMESTAMP, P_VALUE, P_SOURCE_PARTITION,
    NPLAIN
};
static const char *const plain_names[NPLAIN] = {
    "topic", "kafka_partition", "key_schema", "key", "headers", "timestamp", "value",
    "source_partition",
};

typedef struct {
    PyObject_HEAD
    PyTypeObject *cls;
    PyObject *names;           /* tuple of the slot names */
    Py_ssize_t nslots;
    Py_ssize_t offsets[MAX_SLOTS];
    int lazy;                  /* has the source and row slots below */
    Py_ssize_t src_offset;
    Py_ssize_t row_offset;
    PyObject *rows;            /* tuple of the ints 0..n-1, grown to the largest batch */
    char lazy_ok[MAX_SLOTS];   /* the slots given a LazySlot by descriptors() */
    int plain;                 /* has every slot of plain_names: plain_values() works */
    Py_ssize_t plain_offsets[NPLAIN];
} SlotFiller;

typedef struct {
    PyObject_HEAD
    PyObject *loader;          /* name -> tuple of n items */
    PyObject *names;
    Py_ssize_t n;
    Py_ssize_t nslots;
    PyObject *columns[MAX_SLOTS]; /* loaded columns, NULL until first needed */
} LazyColumns;

typedef struct {
    PyObject_HEAD
    SlotFiller *filler;
    Py_ssize_t index;
} LazySlot;

static PyTypeObject SlotFiller_Type;
static PyTypeObject LazyColumns_Type;
static PyTypeObject LazySlot_Type;

#define SLOT(obj, offset) (*(PyObject **)((char *)(obj) + (offset)))

/* ---- slot offsets ------------------------------------------------------------------------ */

static int
slot_offset(PyTypeObject *cls, PyObject *name, Py_ssize_t *offset)
{
    PyObject *descr = PyObject_GetAttr((PyObject *)cls, name);
    if (descr == NULL) {
        return -1;
    }
    int ok = 0;
    if (Py_IS_TYPE(descr, &PyMemberDescr_Type)) {
        PyMemberDef *def = ((PyMemberDescrObject *)descr)->d_member;
        ok = def->type == T_OBJECT_EX && !(def->flags & READONLY) &&
             PyType_IsSubtype(cls, PyDescr_TYPE(descr)) && def->offset > 0 &&
             (size_t)def->offset + sizeof(PyObject *) <= (size_t)cls->tp_basicsize;
        *offset = def->offset;
    }
    else if (Py_IS_TYPE(descr, &LazySlot_Type)) {
        /* one of our own, installed on a class: its offset was checked when it was made */
        LazySlot *slot = (LazySlot *)descr;
        ok = PyType_IsSubtype(cls, slot->filler->cls);
        *offset = slot->filler->offsets[slot->index];
    }
    Py_DECREF(descr);
    if (!ok) {
        PyErr_Format(PyExc_TypeError, "%R is not a writable object slot of %s", name,
                     cls->tp_name);
        return -1;
    }
    return 0;
}

/* ---- LazyColumns ------------------------------------------------------------------------- */

/* The column of slot ``i`` (borrowed), loaded on first use. */
static PyObject *
lazy_column(LazyColumns *src, Py_ssize_t i)
{
    PyObject *column = src->columns[i];
    if (column != NULL) {
        return column;
    }
    if (src->loader == NULL) { /* cleared by the garbage collector */
        PyErr_SetString(PyExc_RuntimeError, "a lazy record's batch columns are gone");
        return NULL;
    }
    column = PyObject_CallOneArg(src->loader, PyTuple_GET_ITEM(src->names, i));
    if (column == NULL) {
        return NULL;
    }
    if (!PyTuple_Check(column) || PyTuple_GET_SIZE(column) != src->n) {
        PyErr_Format(PyExc_ValueError, "the column of %R is not a tuple of %zd items",
                     PyTuple_GET_ITEM(src->names, i), src->n);
        Py_DECREF(column);
        return NULL;
    }
    if (src->columns[i] != NULL) { /* the loader loaded it meanwhile */
        Py_DECREF(column);
        return src->columns[i];
    }
    src->columns[i] = column;
    return column;
}

static int
LazyColumns_traverse(LazyColumns *self, visitproc visit, void *arg)
{
    Py_VISIT(self->loader);
    Py_VISIT(self->names);
    for (Py_ssize_t i = 0; i < self->nslots; i++) {
        Py_VISIT(self->columns[i]);
    }
    return 0;
}

static int
LazyColumns_clear(LazyColumns *self)
{
    Py_CLEAR(self->loader);
    Py_CLEAR(self->names);
    for (Py_ssize_t i = 0; i < self->nslots; i++) {
        Py_CLEAR(self->columns[i]);
    }
    return 0;
}

static void
LazyColumns_dealloc(LazyColumns *self)
{
    PyObject_GC_UnTrack(self);
    LazyColumns_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyTypeObject LazyColumns_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "connectrt._speedups.LazyColumns",
    .tp_basicsize = sizeof(LazyColumns),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = PyDoc_STR("A batch's columns, loaded when a record first reads one."),
    .tp_dealloc = (destructor)LazyColumns_dealloc,
    .tp_traverse = (traverseproc)LazyColumns_traverse,
    .tp_clear = (inquiry)LazyColumns_clear,
    .tp_free = PyObject_GC_Del,
};

/* ---- LazySlot ---------------------------------------------------------------------------- */

static int
check_instance(LazySlot *self, PyObject *obj)
{
    if (!PyObject_TypeCheck(obj, self->filler->cls)) {
        PyErr_Format(PyExc_TypeError, "descriptor %R for %s objects doesn't apply to a %s object",
                     PyTuple_GET_ITEM(self->filler->names, self->index),
                     self->filler->cls->tp_name, Py_TYPE(obj)->tp_name);
        return -1;
    }
    return 0;
}

static PyObject *
no_attribute(LazySlot *self, PyObject *obj)
{
    PyErr_Format(PyExc_AttributeError, "'%.200s' object has no attribute '%U'",
                 Py_TYPE(obj)->tp_name, PyTuple_GET_ITEM(self->filler->names, self->index));
    return NULL;
}

/* Drops the instance's source and row once every slot is set. */
static void
release_when_complete(SlotFiller *f, PyObject *obj)
{
    for (Py_ssize_t s = 0; s < f->nslots; s++) {
        if (f->lazy_ok[s] && SLOT(obj, f->offsets[s]) == NULL) {
            return;
        }
    }
    Py_CLEAR(SLOT(obj, f->src_offset));
    Py_CLEAR(SLOT(obj, f->row_offset));
}

/* Slot ``i`` of ``obj`` (a new reference), loaded from its column when empty; NULL with
   AttributeError when empty and without a source. */
static PyObject *
load_slot(LazySlot *self, PyObject *obj, Py_ssize_t i)
{
    SlotFiller *f = self->filler;
    PyObject *value = SLOT(obj, f->offsets[i]);
    if (value != NULL) {
        return Py_NewRef(value);
    }
    PyObject *src = SLOT(obj, f->src_offset);
    PyObject *rowobj = SLOT(obj, f->row_offset);
    if (src == NULL || rowobj == NULL || !Py_IS_TYPE(src, &LazyColumns_Type) ||
        !PyLong_CheckExact(rowobj)) {
        LazySlot other = {.filler = f, .index = i};
        return no_attribute(&other, obj);
    }
    Py_INCREF(src);
    Py_INCREF(rowobj);
    Py_ssize_t row = PyLong_AsSsize_t(rowobj);
    PyObject *column = lazy_column((LazyColumns *)src, i);
    if (column != NULL && (row < 0 || row >= PyTuple_GET_SIZE(column))) {
        PyErr_SetString(PyExc_IndexError, "a lazy record's row is out of its batch");
        column = NULL;
    }
    if (column != NULL) {
        value = SLOT(obj, f->offsets[i]); /* the loader may have run code that set it */
        if (value == NULL) {
            value = PyTuple_GET_ITEM(column, row);
            SLOT(obj, f->offsets[i]) = Py_NewRef(value);
        }
        Py_INCREF(value);
    }
    Py_DECREF(src);
    Py_DECREF(rowobj);
    if (value != NULL) {
        release_when_complete(f, obj);
    }
    return column == NULL ? NULL : value;
}

static PyObject *
LazySlot_get(LazySlot *self, PyObject *obj, PyObject *type)
{
    if (obj == NULL || obj == Py_None) {
        return Py_NewRef(self);
    }
    if (check_instance(self, obj) < 0) {
        return NULL;
    }
    PyObject *value = SLOT(obj, self->filler->offsets[self->index]);
    if (value != NULL) {
        return Py_NewRef(value);
    }
    return load_slot(self, obj, self->index);
}

static int
LazySlot_set(LazySlot *self, PyObject *obj, PyObject *value)
{
    if (check_instance(self, obj) < 0) {
        return -1;
    }
    SlotFiller *f = self->filler;
    if (value == NULL) {
        /* del: the other slots are loaded first, so that none comes back from a column */
        if (f->lazy && SLOT(obj, f->src_offset) != NULL) {
            for (Py_ssize_t s = 0; s < f->nslots; s++) {
                if (!f->lazy_ok[s]) {
                    continue;
                }
                PyObject *loaded = load_slot(self, obj, s);
                if (loaded == NULL) {
                    return -1;
                }
                Py_DECREF(loaded);
            }
            Py_CLEAR(SLOT(obj, f->src_offset));
            Py_CLEAR(SLOT(obj, f->row_offset));
        }
        if (SLOT(obj, f->offsets[self->index]) == NULL) {
            no_attribute(self, obj);
            return -1;
        }
    }
    PyObject **slot = &SLOT(obj, f->offsets[self->index]);
    PyObject *old = *slot;
    *slot = Py_XNewRef(value);
    Py_XDECREF(old);
    return 0;
}

static PyObject *
LazySlot_repr(LazySlot *self)
{
    return PyUnicode_FromFormat("<lazy slot %R of %s>",
                                PyTuple_GET_ITEM(self->filler->names, self->index),
                                self->filler->cls->tp_name);
}

static int
LazySlot_traverse(LazySlot *self, visitproc visit, void *arg)
{
    Py_VISIT(self->filler);
    return 0;
}

/* No tp_clear (nor SlotFiller's): a descriptor keeps its filler, and a filler its class, as long
   as it lives; the garbage collector breaks their cycle at the class. */
static void
LazySlot_dealloc(LazySlot *self)
{
    PyObject_GC_UnTrack(self);
    Py_CLEAR(self->filler);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
LazySlot_name(LazySlot *self, void *closure)
{
    if (self->filler == NULL) {
        Py_RETURN_NONE;
    }
    return Py_NewRef(PyTuple_GET_ITEM(self->filler->names, self->index));
}

static PyGetSetDef LazySlot_getset[] = {
    {"__name__", (getter)LazySlot_name, NULL, NULL, NULL},
    {NULL},
};

static PyTypeObject LazySlot_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "connectrt._speedups.LazySlot",
    .tp_basicsize = sizeof(LazySlot),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = PyDoc_STR("A slot that loads its value from the batch's column when empty."),
    .tp_dealloc = (destructor)LazySlot_dealloc,
    .tp_traverse = (traverseproc)LazySlot_traverse,
    .tp_descr_get = (descrgetfunc)LazySlot_get,
    .tp_descr_set = (descrsetfunc)LazySlot_set,
    .tp_repr = (reprfunc)LazySlot_repr,
    .tp_getset = LazySlot_getset,
    .tp_free = PyObject_GC_Del,
};

/* ---- instances' deallocation ------------------------------------------------------------ */

/* The classes whose tp_dealloc is record_dealloc (SlotFiller.own_dealloc: a sink record's and
   a source record's), each with the end of its slots (every pointer-sized word from the object
   header to tp_basicsize is one of its slots) and its freed instances (every slot cleared,
   untracked, their type reference kept), which fill() and record_vectorcall() make the next
   records of before asking the allocator, as CPython keeps freed tuples and lists: a sink task
   frees a batch's records just before the next batch's are made, a source task's polled list
   is freed once produced, before it builds the next. At most FREE_RECORDS a class (a source
   task's default batch; 230 KB of source records, 280 KB of sink records). */
#define OWNED_CLASSES 2
#define FREE_RECORDS 2048
typedef struct {
    PyTypeObject *cls;
    Py_ssize_t end;
    int nfree;
    PyObject *free[FREE_RECORDS];
} OwnedClass;
static OwnedClass owned[OWNED_CLASSES];
static int nowned;

/* ``cls``'s entry in owned, or NULL when this module does not free its instances. */
static inline OwnedClass *
owned_class(PyTypeObject *cls)
{
    for (int k = 0; k < nowned; k++) {
        if (owned[k].cls == cls) {
            return &owned[k];
        }
    }
    return NULL;
}

static void
clear_record_slots(PyObject *self, Py_ssize_t end)
{
    for (Py_ssize_t offset = end - (Py_ssize_t)sizeof(PyObject *);
         offset >= (Py_ssize_t)sizeof(PyObject); offset -= (Py_ssize_t)sizeof(PyObject *)) {
        Py_CLEAR(SLOT(self, offset));
    }
}

/* How many records' deallocations are nested on the stack (under the GIL), since the last
   trashcan entered. */
static int dealloc_depth;
#define DEALLOC_DEPTH 32

/* A kept record's reference count of 1, as the allocator gives it (what CPython's free lists
   do; the debug builds' reference bookkeeping needs the private call). */
static inline void
revive(PyObject *record)
{
#if defined(Py_TRACE_REFS) || defined(Py_REF_DEBUG)
    _Py_NewReference(record);
#else
    Py_SET_REFCNT(record, 1);
#endif
}

/* An instance of an owned class itself, untracked: finalized (in case the class was given a
   __del__ later), slots cleared, kept or freed. */
static void
record_free(PyObject *self, PyTypeObject *type, OwnedClass *own)
{
    if (type->tp_finalize != NULL) {
        PyObject_GC_Track(self);
        if (PyObject_CallFinalizerFromDealloc(self) < 0) {
            return; /* resurrected */
        }
        PyObject_GC_UnTrack(self);
    }
    dealloc_depth++;
    clear_record_slots(self, own->end);
    dealloc_depth--;
    if (own->nfree < FREE_RECORDS) {
        own->free[own->nfree++] = self; /* with its reference to the type, for reuse */
        return;
    }
    type->tp_free(self);
    Py_DECREF(type);
}

/* CPython's subtype_dealloc for a class that only has object slots, without its walk over the
   class hierarchy and each class's member table: about half the cost for a sink record.
   CPython's trashcan (the guard against a deep recursion of deallocations: records nested in
   records) costs a third of the rest, so it is entered only every DEALLOC_DEPTH nested records
   (its own limit of nested calls then counts these steps).
   A subclass's instance comes here from the subclass's subtype_dealloc, which has finalized it
   and cleared what the subclass added (its slots, dict, weak references) inside its own
   trashcan, and leaves the type's reference to the base's dealloc, as for any heap type. */
static void
record_dealloc(PyObject *self)
{
    PyTypeObject *type = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    OwnedClass *own = owned_class(type);
    if (own == NULL) { /* a subclass's instance: its owned base's slots */
        for (int k = 0; k < nowned; k++) {
            if (PyType_IsSubtype(type, owned[k].cls)) {
                clear_record_slots(self, owned[k].end);
                break;
            }
        }
        type->tp_free(self);
        Py_DECREF(type);
        return;
    }
    if (dealloc_depth < DEALLOC_DEPTH) {
        record_free(self, type, own);
        return;
    }
    Py_TRASHCAN_BEGIN(self, record_dealloc)
    int depth = dealloc_depth;
    dealloc_depth = 0;
    record_free(self, type, own);
    dealloc_depth = depth;
    Py_TRASHCAN_END
}

/* ---- SlotFiller -------------------------------------------------------------------------- */

static PyObject *
SlotFiller_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    PyTypeObject *cls;
    PyObject *names;
    PyObject *lazy = Py_None;
    static char *kwlist[] = {"cls", "slots", "lazy", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!O!|O:SlotFiller", kwlist, &PyType_Type,
                                     &cls, &PyTuple_Type, &names, &lazy)) {
        return NULL;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(names);
    if (n == 0 || n > MAX_SLOTS) {
        PyErr_Format(PyExc_ValueError, "between 1 and %d slot names, not %zd", MAX_SLOTS, n);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!PyUnicode_Check(PyTuple_GET_ITEM(names, i))) {
            PyErr_SetString(PyExc_TypeError, "slot names are strings");
            return NULL;
        }
    }
    if (lazy != Py_None && (!PyTuple_Check(lazy) || PyTuple_GET_SIZE(lazy) != 2)) {
        PyErr_SetString(PyExc_TypeError, "lazy: the names of the source and row slots");
        return NULL;
    }
    /* Instances are made as object.__new__ makes them: the class's own allocator, no __init__.
       A variable-size class, or one with a __new__ of its own, is refused. */
    if (cls->tp_itemsize != 0 || cls->tp_alloc == NULL ||
        !PyType_HasFeature(cls, Py_TPFLAGS_HEAPTYPE) || cls->tp_new != PyBaseObject_Type.tp_new) {
        PyErr_Format(PyExc_TypeError, "%s: not a plain slotted Python class", cls->tp_name);
        return NULL;
    }
    SlotFiller *self = (SlotFiller *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    self->cls = (PyTypeObject *)Py_NewRef(cls);
    self->names = Py_NewRef(names);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (slot_offset(cls, PyTuple_GET_ITEM(names, i), &self->offsets[i]) < 0) {
            Py_DECREF(self);
            return NULL;
        }
    }
    self->nslots = n;
    self->plain = 1;
    for (int p = 0; p < NPLAIN; p++) {
        Py_ssize_t i = 0;
        while (i < n && PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(names, i),
                                                         plain_names[p]) != 0) {
            i++;
        }
        if (i == n) {
            self->plain = 0;
            break;
        }
        self->plain_offsets[p] = self->offsets[i];
    }
    if (lazy != Py_None) {
        if (slot_offset(cls, PyTuple_GET_ITEM(lazy, 0), &self->src_offset) < 0 ||
            slot_offset(cls, PyTuple_GET_ITEM(lazy, 1), &self->row_offset) < 0) {
            Py_DECREF(self);
            return NULL;
        }
        self->lazy = 1;
    }
    self->rows = PyTuple_New(0);
    if (self->rows == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

static int
SlotFiller_traverse(SlotFiller *self, visitproc visit, void *arg)
{
    Py_VISIT(self->cls);
    Py_VISIT(self->names);
    Py_VISIT(self->rows);
    return 0;
}

static void
SlotFiller_dealloc(SlotFiller *self)
{
    PyObject_GC_UnTrack(self);
    Py_CLEAR(self->cls);
    Py_CLEAR(self->names);
    Py_CLEAR(self->rows);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* The list of n new instances; column s (a tuple of n items, or NULL with src) fills slot s. */
static PyObject *
fill(SlotFiller *self, Py_ssize_t n, PyObject *const *columns, PyObject *src)
{
    Py_ssize_t nslots = self->nslots;
    PyObject **items[MAX_SLOTS];
    Py_ssize_t offsets[MAX_SLOTS];
    Py_ssize_t given = 0;
    for (Py_ssize_t s = 0; s < nslots; s++) {
        if (columns[s] != NULL) {
            items[given] = &PyTuple_GET_ITEM(columns[s], 0);
            offsets[given] = self->offsets[s];
            given++;
        }
    }
    PyObject *rows = NULL;
    if (src != NULL) {
        if (PyTuple_GET_SIZE(self->rows) < n) {
            PyObject *grown = PyTuple_New(n);
            if (grown == NULL) {
                return NULL;
            }
            for (Py_ssize_t i = 0; i < n; i++) {
                PyObject *number = PyLong_FromSsize_t(i);
                if (number == NULL) {
                    Py_DECREF(grown);
                    return NULL;
                }
                PyTuple_SET_ITEM(grown, i, number);
            }
            Py_SETREF(self->rows, grown);
        }
        rows = Py_NewRef(self->rows); /* held: a collection during the loop may run code */
    }
    PyObject *out = PyList_New(n);
    if (out == NULL) {
        Py_XDECREF(rows);
        return NULL;
    }
    PyTypeObject *cls = self->cls;
    allocfunc alloc = cls->tp_alloc;
    OwnedClass *own = owned_class(cls);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *record;
        int reused = own != NULL && own->nfree > 0;
        if (reused) {
            record = own->free[--own->nfree];
            revive(record);
        }
        else {
            record = alloc(cls, 0);
        }
        if (record == NULL) {
            Py_DECREF(out);
            Py_XDECREF(rows);
            return NULL;
        }
        for (Py_ssize_t s = 0; s < given; s++) {
            SLOT(record, offsets[s]) = Py_NewRef(items[s][i]);
        }
        if (rows != NULL) {
            SLOT(record, self->src_offset) = Py_NewRef(src);
            SLOT(record, self->row_offset) = Py_NewRef(PyTuple_GET_ITEM(rows, i));
        }
        if (reused) {
            PyObject_GC_Track(record); /* as the allocator does; after the stores, no code ran */
        }
        PyList_SET_ITEM(out, i, record);
    }
    Py_XDECREF(rows);
    return out;
}

static int
check_columns(SlotFiller *self, PyObject *columns, int allow_none, Py_ssize_t *n)
{
    if (!PyTuple_Check(columns) || PyTuple_GET_SIZE(columns) != self->nslots) {
        PyErr_Format(PyExc_ValueError, "columns: a tuple of %zd columns", self->nslots);
        return -1;
    }
    for (Py_ssize_t s = 0; s < self->nslots; s++) {
        PyObject *column = PyTuple_GET_ITEM(columns, s);
        if (allow_none && column == Py_None) {
            continue;
        }
        if (!PyTuple_Check(column)) {
            PyErr_Format(PyExc_TypeError, "column %zd is not a tuple", s);
            return -1;
        }
        if (*n < 0) {
            *n = PyTuple_GET_SIZE(column);
        }
        else if (PyTuple_GET_SIZE(column) != *n) {
            PyErr_Format(PyExc_ValueError, "column %zd has %zd items, not %zd", s,
                         PyTuple_GET_SIZE(column), *n);
            return -1;
        }
    }
    return 0;
}

/* filler(columns) -> list: one new instance per row of ``columns`` (a tuple of tuples, one per
   slot name, in the filler's order, all the same length). */
static PyObject *
SlotFiller_call(SlotFiller *self, PyObject *args, PyObject *kwargs)
{
    PyObject *columns;
    if (kwargs != NULL && PyDict_GET_SIZE(kwargs) != 0) {
        PyErr_SetString(PyExc_TypeError, "SlotFiller() takes no keyword arguments");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "O:SlotFiller", &columns)) {
        return NULL;
    }
    Py_ssize_t n = -1;
    if (check_columns(self, columns, 0, &n) < 0) {
        return NULL;
    }
    return fill(self, n, &PyTuple_GET_ITEM(columns, 0), NULL);
}

/* filler.fill_lazy(n, columns, loader) -> list: as filler(columns), but a column may be one not
   made yet (None, or anything but a tuple, such as the batch's function that makes it): a slot
   with a LazySlot is then loaded from ``loader(name)`` (a tuple of n items, called once per
   batch) when a record first reads it; any other slot's column is loaded now, the same way
   (None there is an error: nothing says how to make it). */
static PyObject *
SlotFiller_fill_lazy(SlotFiller *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "fill_lazy(n, columns, loader)");
        return NULL;
    }
    if (!self->lazy) {
        PyErr_SetString(PyExc_TypeError, "a SlotFiller without lazy slots");
        return NULL;
    }
    Py_ssize_t n = PyLong_AsSsize_t(args[0]);
    if (n < 0) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_ValueError, "n < 0");
        }
        return NULL;
    }
    PyObject *columns = args[1], *loader = args[2];
    if (!PyTuple_Check(columns) || PyTuple_GET_SIZE(columns) != self->nslots) {
        PyErr_Format(PyExc_ValueError, "columns: a tuple of %zd columns", self->nslots);
        return NULL;
    }
    PyObject *cols[MAX_SLOTS]; /* new references, NULL for the slots left to load */
    Py_ssize_t s = 0;
    int any_lazy = 0;
    for (; s < self->nslots; s++) {
        PyObject *column = PyTuple_GET_ITEM(columns, s);
        PyObject *name = PyTuple_GET_ITEM(self->names, s);
        if (PyTuple_Check(column)) {
            Py_INCREF(column);
        }
        else if (self->lazy_ok[s]) {
            column = NULL;
            any_lazy = 1;
        }
        else if (column == Py_None) {
            PyErr_Format(PyExc_ValueError, "slot %R has no lazy descriptor: its column is needed",
                         name);
            goto error;
        }
        else {
            column = PyObject_CallOneArg(loader, name);
            if (column == NULL) {
                goto error;
            }
            if (!PyTuple_Check(column)) {
                PyErr_Format(PyExc_TypeError, "the column of %R is not a tuple", name);
                Py_DECREF(column);
                goto error;
            }
        }
        if (column != NULL && PyTuple_GET_SIZE(column) != n) {
            PyErr_Format(PyExc_ValueError, "columns of %zd items for %zd records",
                         PyTuple_GET_SIZE(column), n);
            Py_DECREF(column);
            goto error;
        }
        cols[s] = column;
    }
    PyObject *out;
    if (!any_lazy) {
        out = fill(self, n, cols, NULL);
    }
    else {
        LazyColumns *src = PyObject_GC_New(LazyColumns, &LazyColumns_Type);
        if (src == NULL) {
            goto error;
        }
        src->loader = Py_NewRef(loader);
        src->names = Py_NewRef(self->names);
        src->n = n;
        src->nslots = self->nslots;
        for (Py_ssize_t k = 0; k < self->nslots; k++) {
            src->columns[k] = Py_XNewRef(cols[k]);
        }
        PyObject_GC_Track(src);
        out = fill(self, n, cols, (PyObject *)src);
        Py_DECREF(src);
    }
    for (Py_ssize_t k = 0; k < self->nslots; k++) {
        Py_XDECREF(cols[k]);
    }
    return out;
error:
    for (Py_ssize_t k = 0; k < s; k++) {
        Py_XDECREF(cols[k]);
    }
    return NULL;
}

/* filler.make(*values) -> one new instance, ``values`` stored in the slots in order (the
   constructor's work for a class whose __init__ only stores its arguments, without the call
   machinery of a Python-level __init__). */
static PyObject *
SlotFiller_make(SlotFiller *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != self->nslots) {
        PyErr_Format(PyExc_TypeError, "make() takes %zd values (%zd given)", self->nslots,
                     nargs);
        return NULL;
    }
    PyObject *record = self->cls->tp_alloc(self->cls, 0);
    if (record == NULL) {
        return NULL;
    }
    for (Py_ssize_t s = 0; s < nargs; s++) {
        SLOT(record, self->offsets[s]) = Py_NewRef(args[s]);
    }
    return record;
}

/* filler.store(obj, *values) -> None: ``values`` stored in obj's slots in order (what an
   __init__ that only stores its arguments does, in one call; lazy slots' loading bypassed). */
static PyObject *
SlotFiller_store(SlotFiller *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != self->nslots + 1) {
        PyErr_Format(PyExc_TypeError, "store() takes an instance and %zd values (%zd given)",
                     self->nslots, nargs - 1);
        return NULL;
    }
    PyObject *obj = args[0];
    if (!PyObject_TypeCheck(obj, self->cls)) {
        PyErr_Format(PyExc_TypeError, "store() into a %s, not a %s", Py_TYPE(obj)->tp_name,
                     self->cls->tp_name);
        return NULL;
    }
    for (Py_ssize_t s = 0; s < self->nslots; s++) {
        PyObject **slot = &SLOT(obj, self->offsets[s]);
        PyObject *old = *slot;
        *slot = Py_NewRef(args[s + 1]);
        Py_XDECREF(old);
    }
    Py_RETURN_NONE;
}

/* filler.plain_values(records) -> (topic, timestamp, values, one partition, own) or None: one
   walk over a polled list of source records that can be produced alike, by one C-level loop of
   ``produce`` (the sender's list path, SourceBatchSender._send_list). Every item must be an
   instance of exactly the filler's class (not a subclass: its fields may be properties) with
   every slot read here set, to the first record's topic (a str: the same object or an equal
   str), with the first record's timestamp (None, or an int: the same object or an equal int);
   else None (nothing else done), as for an empty list: the caller's per-record loop handles
   it. A record is plain when its key, key_schema and kafka_partition are None, its headers
   None or an empty list and its value bytes or None; ``own`` lists, in order, the indices of
   the records that are not (a record with headers: a traced one, say), which the sender sends
   one by one between the plain ones. ``values`` holds the plain records' values, in order
   (None in the place of each record of ``own``); ``one partition`` is True when every
   record's source partition is the same object (the sender then notes one offset without
   looking at the records again). The slots are read by offset, every value compared at C
   level: no Python code runs during the walk, so the list and its records cannot change under
   it. An unset slot makes the answer None (the per-record loop raises its AttributeError). */
static PyObject *
SlotFiller_plain_values(SlotFiller *self, PyObject *records)
{
    if (!self->plain) {
        PyErr_Format(PyExc_TypeError, "plain_values(): %R has no slot for every one of topic, "
                     "kafka_partition, key_schema, key, headers, timestamp, value and "
                     "source_partition",
                     self->names);
        return NULL;
    }
    if (!PyList_Check(records)) {
        PyErr_Format(PyExc_TypeError, "plain_values() takes a list, not %s",
                     Py_TYPE(records)->tp_name);
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(records);
    if (n == 0) {
        Py_RETURN_NONE;
    }
    const Py_ssize_t *off = self->plain_offsets;
    PyTypeObject *cls = self->cls;
    PyObject *first = PyList_GET_ITEM(records, 0);
    if (!Py_IS_TYPE(first, cls)) {
        Py_RETURN_NONE;
    }
    PyObject *topic = SLOT(first, off[P_TOPIC]);
    PyObject *timestamp = SLOT(first, off[P_TIMESTAMP]);
    PyObject *partition = SLOT(first, off[P_SOURCE_PARTITION]);
    if (topic == NULL || !PyUnicode_CheckExact(topic) || timestamp == NULL ||
        (timestamp != Py_None && !PyLong_CheckExact(timestamp)) || partition == NULL) {
        Py_RETURN_NONE;
    }
    int one_partition = 1;
    PyObject *values = PyList_New(n);
    PyObject *own = PyList_New(0);
    if (values == NULL || own == NULL) {
        Py_XDECREF(values);
        Py_XDECREF(own);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *record = PyList_GET_ITEM(records, i);
        if (!Py_IS_TYPE(record, cls)) {
            goto not_plain;
        }
        PyObject *sp = SLOT(record, off[P_SOURCE_PARTITION]);
        PyObject *key = SLOT(record, off[P_KEY]);
        PyObject *key_schema = SLOT(record, off[P_KEY_SCHEMA]);
        PyObject *kafka_partition = SLOT(record, off[P_PARTITION]);
        PyObject *headers = SLOT(record, off[P_HEADERS]);
        PyObject *t = SLOT(record, off[P_TOPIC]);
        PyObject *ts = SLOT(record, off[P_TIMESTAMP]);
        PyObject *value = SLOT(record, off[P_VALUE]);
        if (sp == NULL || key == NULL || key_schema == NULL || kafka_partition == NULL ||
            headers == NULL || t == NULL || ts == NULL || value == NULL) {
            goto not_plain; /* an unset slot */
        }
        if (sp != partition) {
            one_partition = 0;
        }
        if (t != topic && (!PyUnicode_CheckExact(t) || PyUnicode_Compare(t, topic) != 0)) {
            goto not_plain;
        }
        if (ts != timestamp &&
            (timestamp == Py_None || !PyLong_CheckExact(ts) ||
             PyObject_RichCompareBool(ts, timestamp, Py_EQ) != 1)) { /* exact ints: no error */
            goto not_plain;
        }
        if (key != Py_None || key_schema != Py_None || kafka_partition != Py_None ||
            (headers != Py_None && !(PyList_CheckExact(headers) && PyList_GET_SIZE(headers) == 0)) ||
            (value != Py_None && !PyBytes_CheckExact(value))) {
            PyObject *index = PyLong_FromSsize_t(i); /* a record of its own */
            if (index == NULL || PyList_Append(own, index) < 0) {
                Py_XDECREF(index);
                goto error;
            }
            Py_DECREF(index);
            value = Py_None;
        }
        PyList_SET_ITEM(values, i, Py_NewRef(value));
    }
    return Py_BuildValue("(OONON)", topic, timestamp, values, one_partition ? Py_True : Py_False,
                         own);
not_plain:
    Py_DECREF(values); /* the items not set yet are NULL: freed as such */
    Py_DECREF(own);
    Py_RETURN_NONE;
error:
    Py_DECREF(values);
    Py_DECREF(own);
    return NULL;
}

/* filler.descriptors(names) -> tuple of LazySlot, one per name (slots of the filler): the
   descriptors to install on the class; only their slots may be left to load (fill_lazy). */
static PyObject *
SlotFiller_descriptors(SlotFiller *self, PyObject *names)
{
    if (!self->lazy) {
        PyErr_SetString(PyExc_TypeError, "a SlotFiller without lazy slots");
        return NULL;
    }
    if (!PyTuple_Check(names)) {
        PyErr_SetString(PyExc_TypeError, "descriptors(names): a tuple of slot names");
        return NULL;
    }
    Py_ssize_t count = PyTuple_GET_SIZE(names);
    Py_ssize_t indices[MAX_SLOTS];
    if (count > self->nslots) {
        PyErr_SetString(PyExc_ValueError, "more names than slots");
        return NULL;
    }
    for (Py_ssize_t k = 0; k < count; k++) {
        indices[k] = -1;
        for (Py_ssize_t s = 0; s < self->nslots; s++) {
            int eq = PyObject_RichCompareBool(PyTuple_GET_ITEM(names, k),
                                              PyTuple_GET_ITEM(self->names, s), Py_EQ);
            if (eq < 0) {
                return NULL;
            }
            if (eq) {
                indices[k] = s;
                break;
            }
        }
        if (indices[k] < 0) {
            PyErr_Format(PyExc_ValueError, "%R is not a slot of the filler",
                         PyTuple_GET_ITEM(names, k));
            return NULL;
        }
    }
    PyObject *out = PyTuple_New(count);
    if (out == NULL) {
        return NULL;
    }
    for (Py_ssize_t k = 0; k < count; k++) {
        LazySlot *slot = PyObject_GC_New(LazySlot, &LazySlot_Type);
        if (slot == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        slot->filler = (SlotFiller *)Py_NewRef(self);
        slot->index = indices[k];
        PyObject_GC_Track(slot);
        PyTuple_SET_ITEM(out, k, (PyObject *)slot);
    }
    for (Py_ssize_t k = 0; k < count; k++) {
        self->lazy_ok[indices[k]] = 1;
    }
    return out;
}

/* filler.copy(obj, list_slot) -> a new instance of the filler's class with every slot of obj
   (loaded first where lazy), slot ``list_slot`` (an index, or -1) copied as list(value) unless
   None: ConnectRecord._copy without its 26 attribute accesses. */
static PyObject *
SlotFiller_copy(SlotFiller *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "copy(obj, list_slot)");
        return NULL;
    }
    PyObject *obj = args[0];
    if (!PyObject_TypeCheck(obj, self->cls)) {
        PyErr_Format(PyExc_TypeError, "copy() of a %s, not a %s", Py_TYPE(obj)->tp_name,
                     self->cls->tp_name);
        return NULL;
    }
    Py_ssize_t list_slot = PyLong_AsSsize_t(args[1]);
    if (list_slot == -1 && PyErr_Occurred()) {
        return NULL;
    }
    PyObject *values[MAX_SLOTS];
    Py_ssize_t got = 0;
    for (; got < self->nslots; got++) {
        PyObject *value = SLOT(obj, self->offsets[got]);
        if (value != NULL) {
            value = Py_NewRef(value);
        }
        else if (self->lazy && self->lazy_ok[got]) {
            LazySlot any = {.filler = self, .index = got};
            value = load_slot(&any, obj, got);
        }
        else {
            LazySlot any = {.filler = self, .index = got};
            no_attribute(&any, obj);
        }
        if (value == NULL) {
            goto error;
        }
        if (got == list_slot && value != Py_None) {
            Py_SETREF(value, PySequence_List(value));
            if (value == NULL) {
                goto error;
            }
        }
        values[got] = value;
    }
    PyObject *copy = self->cls->tp_alloc(self->cls, 0);
    if (copy == NULL) {
        goto error;
    }
    for (Py_ssize_t s = 0; s < self->nslots; s++) {
        SLOT(copy, self->offsets[s]) = values[s]; /* the reference taken above */
    }
    return copy;
error:
    for (Py_ssize_t s = 0; s < got; s++) {
        Py_DECREF(values[s]);
    }
    return NULL;
}

/* filler.own_dealloc(slots) -> None: record_dealloc installed as the class's tp_dealloc.
   ``slots`` names every slot of the class (its own and its bases'); they must fill its
   instances from the header to tp_basicsize, with no dict, weak reference list or finalizer.
   Once per process, on one class. */
static PyObject *
SlotFiller_own_dealloc(SlotFiller *self, PyObject *names)
{
    PyTypeObject *cls = self->cls;
    if (owned_class(cls) != NULL) {
        Py_RETURN_NONE;
    }
    if (nowned == OWNED_CLASSES) {
        PyErr_Format(PyExc_TypeError, "own_dealloc: already installed on %d classes",
                     OWNED_CLASSES);
        return NULL;
    }
    if (!PyTuple_Check(names)) {
        PyErr_SetString(PyExc_TypeError, "own_dealloc(slots): a tuple of slot names");
        return NULL;
    }
    Py_ssize_t words = (cls->tp_basicsize - (Py_ssize_t)sizeof(PyObject)) /
                       (Py_ssize_t)sizeof(PyObject *);
    if (cls->tp_dictoffset != 0 || cls->tp_weaklistoffset != 0 || cls->tp_finalize != NULL ||
        cls->tp_del != NULL || cls->tp_base == NULL ||
        !PyType_HasFeature(cls->tp_base, Py_TPFLAGS_HEAPTYPE) ||
        cls->tp_dealloc != cls->tp_base->tp_dealloc || !PyType_IS_GC(cls) ||
        cls->tp_free != PyObject_GC_Del || PyTuple_GET_SIZE(names) != words ||
        words > 2 * MAX_SLOTS) {
        PyErr_Format(PyExc_TypeError, "own_dealloc: %s is not a class of %zd object slots only",
                     cls->tp_name, PyTuple_GET_SIZE(names));
        return NULL;
    }
    char seen[2 * MAX_SLOTS] = {0};
    for (Py_ssize_t k = 0; k < words; k++) {
        Py_ssize_t offset;
        if (slot_offset(cls, PyTuple_GET_ITEM(names, k), &offset) < 0) {
            return NULL;
        }
        Py_ssize_t word = (offset - (Py_ssize_t)sizeof(PyObject)) / (Py_ssize_t)sizeof(PyObject *);
        if (word < 0 || word >= words || seen[word]) {
            PyErr_Format(PyExc_TypeError, "own_dealloc: %R twice or out of %s", 
                         PyTuple_GET_ITEM(names, k), cls->tp_name);
            return NULL;
        }
        seen[word] = 1;
    }
    owned[nowned].cls = (PyTypeObject *)Py_NewRef(cls); /* kept: its tp_dealloc is ours */
    owned[nowned].end = cls->tp_basicsize;
    owned[nowned].nfree = 0;
    nowned++;
    cls->tp_dealloc = record_dealloc;
    Py_RETURN_NONE;
}

/* The constructor of one class, called by ``cls(...)`` without CPython's generic path (a
   tuple and a kwargs dict made per call, object.__new__, then __init__ as a Python frame):
   ``cls->tp_vectorcall``, installed by own_constructor(). Its instances get every slot of the
   filler, in the filler's order as positional parameters (or by keyword), the first
   ``ctor_required`` required and the rest None when not given: what the class's own __init__
   does, which must store exactly that. Any other call (a subclass, which has its own type
   object; a missing, unknown or repeated argument; too many) takes the generic path, so its
   errors are Python's own. */
static SlotFiller *ctor_filler;
static Py_ssize_t ctor_required;

static PyObject *
generic_call(PyObject *callable, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *tuple = PyTuple_New(nargs);
    if (tuple == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < nargs; i++) {
        PyTuple_SET_ITEM(tuple, i, Py_NewRef(args[i]));
    }
    PyObject *kwargs = NULL;
    if (kwnames != NULL && PyTuple_GET_SIZE(kwnames) > 0) {
        kwargs = PyDict_New();
        if (kwargs == NULL) {
            Py_DECREF(tuple);
            return NULL;
        }
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(kwnames); k++) {
            if (PyDict_SetItem(kwargs, PyTuple_GET_ITEM(kwnames, k), args[nargs + k]) < 0) {
                Py_DECREF(tuple);
                Py_DECREF(kwargs);
                return NULL;
            }
        }
    }
    PyObject *result = PyType_Type.tp_call(callable, tuple, kwargs);
    Py_DECREF(tuple);
    Py_XDECREF(kwargs);
    return result;
}

static PyObject *
record_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    SlotFiller *f = ctor_filler;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    Py_ssize_t n = f->nslots;
    if ((PyTypeObject *)callable != f->cls || nargs > n) {
        return generic_call(callable, args, nargs, kwnames);
    }
    PyTypeObject *cls = f->cls;
    OwnedClass *own = owned_class(cls); /* its freed instances, if it has own_dealloc() */
    if (kwnames == NULL && nargs >= ctor_required && own != NULL && own->nfree > 0) {
        /* positional only, a freed instance at hand (every slot NULL): stored as they come */
        PyObject *obj = own->free[--own->nfree];
        revive(obj);
        Py_ssize_t i = 0;
        for (; i < nargs; i++) {
            SLOT(obj, f->offsets[i]) = Py_NewRef(args[i]);
        }
        for (; i < n; i++) {
            SLOT(obj, f->offsets[i]) = Py_NewRef(Py_None);
        }
        PyObject_GC_Track(obj); /* as the allocator does; after the stores, no code ran */
        return obj;
    }
    PyObject *values[MAX_SLOTS];
    for (Py_ssize_t i = 0; i < n; i++) {
        values[i] = NULL;
    }
    for (Py_ssize_t i = 0; i < nargs; i++) {
        values[i] = args[i];
    }
    if (kwnames != NULL) {
        PyObject *const *names = &PyTuple_GET_ITEM(f->names, 0);
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(kwnames); k++) {
            PyObject *name = PyTuple_GET_ITEM(kwnames, k);
            Py_ssize_t j = 0;
            while (j < n && names[j] != name) { /* keywords are interned: identity first */
                j++;
            }
            if (j == n) {
                j = 0;
                while (j < n && !(PyUnicode_Check(name) && PyUnicode_Compare(name, names[j]) == 0)) {
                    j++;
                }
            }
            if (j == n || values[j] != NULL) { /* unknown or repeated: Python says which */
                return generic_call(callable, args, nargs, kwnames);
            }
            values[j] = args[nargs + k];
        }
    }
    for (Py_ssize_t i = 0; i < ctor_required; i++) {
        if (values[i] == NULL) {
            return generic_call(callable, args, nargs, kwnames);
        }
    }
    if (own != NULL && own->nfree > 0) { /* every slot NULL: stored without a look */
        PyObject *obj = own->free[--own->nfree];
        revive(obj);
        for (Py_ssize_t i = 0; i < n; i++) {
            SLOT(obj, f->offsets[i]) = Py_NewRef(values[i] != NULL ? values[i] : Py_None);
        }
        PyObject_GC_Track(obj); /* as the allocator does; after the stores, no code ran */
        return obj;
    }
    PyObject *obj = cls->tp_alloc(cls, 0);
    if (obj == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = values[i] != NULL ? values[i] : Py_None;
        PyObject *old = SLOT(obj, f->offsets[i]);
        SLOT(obj, f->offsets[i]) = Py_NewRef(v);
        Py_XDECREF(old); /* NULL: a fresh instance */
    }
    return obj;
}

/* filler.own_constructor(required) -> None: record_vectorcall installed as the class's
   constructor (see there); the class's __init__ must store its parameters, named as the
   filler's slots and in their order, the first ``required`` without a default, the others
   defaulting to None. Once per process, on one class with no __new__ of its own. */
static PyObject *
SlotFiller_own_constructor(SlotFiller *self, PyObject *arg)
{
    Py_ssize_t required = PyLong_AsSsize_t(arg);
    if (required == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (ctor_filler != NULL) {
        if (ctor_filler == self) {
            Py_RETURN_NONE;
        }
        PyErr_Format(PyExc_TypeError, "own_constructor: already installed on %s",
                     ctor_filler->cls->tp_name);
        return NULL;
    }
    PyTypeObject *cls = self->cls;
    if (required < 0 || required > self->nslots || self->lazy ||
        cls->tp_vectorcall != NULL || cls->tp_new != PyBaseObject_Type.tp_new) {
        PyErr_Format(PyExc_TypeError, "own_constructor: not for %s", cls->tp_name);
        return NULL;
    }
    ctor_filler = (SlotFiller *)Py_NewRef(self); /* kept: the class's constructor for good */
    ctor_required = required;
    cls->tp_vectorcall = record_vectorcall;
    Py_RETURN_NONE;
}

static PyObject *
SlotFiller_repr(SlotFiller *self)
{
    return PyUnicode_FromFormat("<SlotFiller of %s, %zd slots%s>",
                                self->cls->tp_name, self->nslots,
                                self->lazy ? ", lazy" : "");
}

static PyMethodDef SlotFiller_methods[] = {
    {"store", (PyCFunction)(void (*)(void))SlotFiller_store, METH_FASTCALL,
     PyDoc_STR("store(obj, *values) -> None: the values stored in obj's slots in order")},
    {"plain_values", (PyCFunction)SlotFiller_plain_values, METH_O,
     PyDoc_STR("plain_values(records) -> (topic, timestamp, values, one partition, own), or "
               "None")},
    {"make", (PyCFunction)(void (*)(void))SlotFiller_make, METH_FASTCALL,
     PyDoc_STR("make(*values) -> one new instance, the values stored in the slots in order")},
    {"fill_lazy", (PyCFunction)(void (*)(void))SlotFiller_fill_lazy, METH_FASTCALL,
     PyDoc_STR("fill_lazy(n, columns, loader) -> list: None columns load on first read")},
    {"descriptors", (PyCFunction)SlotFiller_descriptors, METH_O,
     PyDoc_STR("descriptors(names) -> tuple of LazySlot, one per name, to install on the class")},
    {"copy", (PyCFunction)(void (*)(void))SlotFiller_copy, METH_FASTCALL,
     PyDoc_STR("copy(obj, list_slot) -> a new instance with obj's slots")},
    {"own_constructor", (PyCFunction)SlotFiller_own_constructor, METH_O,
     PyDoc_STR("own_constructor(required) -> None: the class's calls built by this module")},
    {"own_dealloc", (PyCFunction)SlotFiller_own_dealloc, METH_O,
     PyDoc_STR("own_dealloc(slots) -> None: the class's instances freed by this module")},
    {NULL},
};

static PyTypeObject SlotFiller_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "connectrt._speedups.SlotFiller",
    .tp_basicsize = sizeof(SlotFiller),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = PyDoc_STR("SlotFiller(cls, slots, lazy=None): fills new instances of cls."),
    .tp_new = SlotFiller_new,
    .tp_dealloc = (destructor)SlotFiller_dealloc,
    .tp_traverse = (traverseproc)SlotFiller_traverse,
    .tp_call = (ternaryfunc)SlotFiller_call,
    .tp_repr = (reprfunc)SlotFiller_repr,
    .tp_methods = SlotFiller_methods,
    .tp_free = PyObject_GC_Del,
};

/* ---- C methods called on many objects ------------------------------------------------------ */

/* The C function of ``method`` when it is a method descriptor of a C type taking no arguments
   (METH_NOARGS: librdkafka's Message.value(), .partition(), .timestamp()...), and its type in
   ``owner``; else NULL. */
static PyCFunction
noargs_function(PyObject *method, PyTypeObject **owner)
{
    if (Py_IS_TYPE(method, &PyMethodDescr_Type)) {
        PyMethodDef *def = ((PyMethodDescrObject *)method)->d_method;
        if ((def->ml_flags & ~METH_COEXIST) == METH_NOARGS) {
            *owner = PyDescr_TYPE(method);
            return def->ml_meth;
        }
    }
    return NULL;
}

/* method(item), a new reference: ``direct`` (noargs_function's answer) called on an item of
   exactly its type, without the call protocol's checks around it (the caller has entered a
   recursive call once for its loop), anything else called as Python calls it. */
static inline PyObject *
call_noargs(PyObject *method, PyCFunction direct, PyTypeObject *owner, PyObject *item)
{
    if (direct != NULL && Py_IS_TYPE(item, owner)) {
        return direct(item, NULL);
    }
    Py_INCREF(item); /* held: a Python method may change the list it came from */
    PyObject *value = PyObject_CallOneArg(method, item);
    Py_DECREF(item);
    return value;
}

/* ---- timestamps -------------------------------------------------------------------------- */

/* timestamp_columns(msgs, timestamp, types) -> (timestamps, timestamp types): one pass over a
   list of consumed messages calling ``timestamp(msg)`` (librdkafka's (kind, ms) pair); a
   message of kind 0 (no timestamp) has None, the type of each is ``types[kind]``. Replaces a
   list of pairs and two ``map`` s over it. */
static PyObject *
timestamp_columns(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "timestamp_columns(msgs, timestamp, types)");
        return NULL;
    }
    PyObject *msgs = args[0], *accessor = args[1], *types = args[2];
    if (!PyList_Check(msgs) || !PyTuple_Check(types)) {
        PyErr_SetString(PyExc_TypeError, "timestamp_columns: msgs a list, types a tuple");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(msgs);
    Py_ssize_t ntypes = PyTuple_GET_SIZE(types);
    PyTypeObject *owner = NULL;
    PyCFunction direct = noargs_function(accessor, &owner);
    int entered = 0;
    PyObject *stamps = PyTuple_New(n);
    PyObject *kinds = PyTuple_New(n);
    if (stamps == NULL || kinds == NULL) {
        goto error;
    }
    if (Py_EnterRecursiveCall(" in timestamp_columns")) { /* once for the loop */
        goto error;
    }
    entered = 1;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (i >= PyList_GET_SIZE(msgs)) {
            PyErr_SetString(PyExc_RuntimeError, "the message list changed size");
            goto error;
        }
        PyObject *pair = call_noargs(accessor, direct, owner, PyList_GET_ITEM(msgs, i));
        if (pair == NULL) {
            goto error;
        }
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
            Py_DECREF(pair);
            PyErr_SetString(PyExc_TypeError, "a message's timestamp() is not a (kind, ms) pair");
            goto error;
        }
        long kind = PyLong_AsLong(PyTuple_GET_ITEM(pair, 0));
        if (kind < 0 || kind >= ntypes) {
            Py_DECREF(pair);
            if (!PyErr_Occurred()) {
                PyErr_Format(PyExc_IndexError, "timestamp kind %ld has no type", kind);
            }
            goto error;
        }
        PyTuple_SET_ITEM(stamps, i, Py_NewRef(kind == 0 ? Py_None : PyTuple_GET_ITEM(pair, 1)));
        PyTuple_SET_ITEM(kinds, i, Py_NewRef(PyTuple_GET_ITEM(types, kind)));
        Py_DECREF(pair);
    }
    Py_LeaveRecursiveCall();
    entered = 0;
    if (PyList_GET_SIZE(msgs) != n) {
        PyErr_SetString(PyExc_RuntimeError, "the message list changed size");
        goto error;
    }
    PyObject *out = PyTuple_Pack(2, stamps, kinds);
    Py_DECREF(stamps);
    Py_DECREF(kinds);
    return out;
error:
    if (entered) {
        Py_LeaveRecursiveCall();
    }
    Py_XDECREF(stamps);
    Py_XDECREF(kinds);
    return NULL;
}

/* method_column(method, items) -> tuple(map(method, items)), ``items`` a list or tuple. For a
   C type's method taking no arguments (a method descriptor, METH_NOARGS: librdkafka's
   Message.value(), .partition(), .error()...) its C function is called directly on each item
   of that type, without the call protocol's argument checks around each call (about half the
   cost of map's per item); anything else is called as map would call it. */
static PyObject *
method_column(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "method_column(method, items)");
        return NULL;
    }
    PyObject *method = args[0], *items = args[1];
    if (!PyList_Check(items) && !PyTuple_Check(items)) {
        PyErr_SetString(PyExc_TypeError, "method_column: items a list or a tuple");
        return NULL;
    }
    PyTypeObject *owner = NULL;
    PyCFunction direct = noargs_function(method, &owner);
    Py_ssize_t n = Py_SIZE(items);
    PyObject *out = PyTuple_New(n);
    if (out == NULL) {
        return NULL;
    }
    PyObject **item_at = PyList_Check(items) ? ((PyListObject *)items)->ob_item
                                             : &PyTuple_GET_ITEM(items, 0);
    if (Py_EnterRecursiveCall(" in method_column")) { /* once for the loop: its calls nest one */
        Py_DECREF(out);
        return NULL;
    }
    Py_INCREF(items);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (Py_SIZE(items) != n) { /* a list changed by a method of Python code */
            PyErr_SetString(PyExc_RuntimeError, "method_column: the list changed size");
            goto error;
        }
        if (PyList_Check(items)) {
            item_at = ((PyListObject *)items)->ob_item;
        }
        PyObject *value = call_noargs(method, direct, owner, item_at[i]);
        if (value == NULL) {
            goto error;
        }
        PyTuple_SET_ITEM(out, i, value);
    }
    Py_LeaveRecursiveCall();
    Py_DECREF(items);
    return out;
error:
    Py_LeaveRecursiveCall();
    Py_DECREF(items);
    Py_DECREF(out);
    return NULL;
}

/* chosen_fields(msgs, chosen, accessors, name) -> list: SinkTracer._begin's loop. For each
   position of ``chosen`` (a sequence of ints) the consumed message ``msgs[position]``, unless
   its ``error()`` is not None: the value of its first header named ``name`` (None without
   one), its topic, partition, offset and timestamp (the second item of ``timestamp()``), flat,
   5 items a message. ``accessors``: message_batch's eight (error, topic, partition, offset,
   key, value, timestamp, headers), called as method_column calls them. */
static PyObject *
chosen_fields(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "chosen_fields(msgs, chosen, accessors, name)");
        return NULL;
    }
    PyObject *msgs = args[0], *accessors = args[2], *name = args[3];
    if (!PyList_Check(msgs) || !PyTuple_Check(accessors) || PyTuple_GET_SIZE(accessors) != 8 ||
        !PyUnicode_Check(name)) {
        PyErr_SetString(PyExc_TypeError, "chosen_fields: msgs a list, accessors a tuple of 8, "
                                         "name a str");
        return NULL;
    }
    static const int used[6] = {0, 7, 1, 2, 3, 6}; /* error, headers, topic, partition, ... */
    PyObject *method[6];
    PyCFunction direct[6];
    PyTypeObject *owner[6];
    for (int k = 0; k < 6; k++) {
        method[k] = PyTuple_GET_ITEM(accessors, used[k]);
        owner[k] = NULL;
        direct[k] = noargs_function(method[k], &owner[k]);
    }
    PyObject *chosen = PySequence_Fast(args[1], "chosen_fields: chosen a sequence");
    if (chosen == NULL) {
        return NULL;
    }
    PyObject *out = PyList_New(0);
    if (out == NULL) {
        Py_DECREF(chosen);
        return NULL;
    }
    Py_INCREF(msgs);
    Py_ssize_t count = PySequence_Fast_GET_SIZE(chosen);
    for (Py_ssize_t c = 0; c < count; c++) {
        Py_ssize_t at = PyLong_AsSsize_t(PySequence_Fast_GET_ITEM(chosen, c));
        if (at == -1 && PyErr_Occurred()) {
            goto error;
        }
        if (at < 0 || at >= PyList_GET_SIZE(msgs)) {
            PyErr_SetString(PyExc_IndexError, "chosen_fields: a position outside msgs");
            goto error;
        }
        PyObject *msg = PyList_GET_ITEM(msgs, at);
        Py_INCREF(msg);
        PyObject *field[5] = {NULL, NULL, NULL, NULL, NULL};
        PyObject *failed = call_noargs(method[0], direct[0], owner[0], msg);
        if (failed == NULL) {
            Py_DECREF(msg);
            goto error;
        }
        int skip = failed != Py_None;
        Py_DECREF(failed);
        if (skip) {
            Py_DECREF(msg);
            continue;
        }
        PyObject *headers = call_noargs(method[1], direct[1], owner[1], msg);
        int ok = headers != NULL;
        if (ok && (PyList_Check(headers) || PyTuple_Check(headers))) {
            PyObject *seq = headers;
            for (Py_ssize_t h = 0; h < Py_SIZE(seq); h++) {
                PyObject *pair = PyList_Check(seq) ? PyList_GET_ITEM(seq, h)
                                                   : PyTuple_GET_ITEM(seq, h);
                if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
                    PyErr_SetString(PyExc_TypeError, "chosen_fields: a header not a pair");
                    ok = 0;
                    break;
                }
                Py_INCREF(pair); /* a key's __eq__ could change the list */
                int same = PyObject_RichCompareBool(PyTuple_GET_ITEM(pair, 0), name, Py_EQ);
                if (same > 0) {
                    field[0] = Py_NewRef(PyTuple_GET_ITEM(pair, 1));
                }
                Py_DECREF(pair);
                if (same < 0) {
                    ok = 0;
                }
                if (same != 0) {
                    break;
                }
            }
        }
        Py_XDECREF(headers);
        if (ok && field[0] == NULL) {
            field[0] = Py_NewRef(Py_None);
        }
        for (int k = 2; ok && k < 5; k++) {
            field[k - 1] = call_noargs(method[k], direct[k], owner[k], msg);
            ok = field[k - 1] != NULL;
        }
        PyObject *stamp = ok ? call_noargs(method[5], direct[5], owner[5], msg) : NULL;
        if (stamp != NULL) {
            if (PyTuple_Check(stamp) && PyTuple_GET_SIZE(stamp) == 2) {
                field[4] = Py_NewRef(PyTuple_GET_ITEM(stamp, 1));
            } else {
                PyErr_SetString(PyExc_TypeError, "chosen_fields: timestamp() not a pair");
            }
            Py_DECREF(stamp);
        }
        Py_DECREF(msg);
        ok = field[4] != NULL;
        for (int k = 0; k < 5; k++) {
            if (ok && PyList_Append(out, field[k]) < 0) {
                ok = 0;
            }
            Py_XDECREF(field[k]);
        }
        if (!ok) {
            goto error;
        }
    }
    Py_DECREF(msgs);
    Py_DECREF(chosen);
    return out;
error:
    Py_DECREF(msgs);
    Py_DECREF(chosen);
    Py_DECREF(out);
    return NULL;
}

/* method_any(method, items) -> any(map(method, items)), ``items`` a list or tuple: as
   method_column, without the tuple (the batch's error check: no message has an error). */
static PyObject *
method_any(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "method_any(method, items)");
        return NULL;
    }
    PyObject *method = args[0], *items = args[1];
    if (!PyList_Check(items) && !PyTuple_Check(items)) {
        PyErr_SetString(PyExc_TypeError, "method_any: items a list or a tuple");
        return NULL;
    }
    PyTypeObject *owner = NULL;
    PyCFunction direct = noargs_function(method, &owner);
    if (Py_EnterRecursiveCall(" in method_any")) {
        return NULL;
    }
    Py_INCREF(items);
    int found = 0;
    for (Py_ssize_t i = 0; !found && i < Py_SIZE(items); i++) {
        PyObject *item = PyList_Check(items) ? PyList_GET_ITEM(items, i)
                                             : PyTuple_GET_ITEM(items, i);
        PyObject *value = call_noargs(method, direct, owner, item);
        if (value == NULL) {
            found = -1;
            break;
        }
        found = value == Py_None ? 0 : PyObject_IsTrue(value);
        Py_DECREF(value);
    }
    Py_LeaveRecursiveCall();
    Py_DECREF(items);
    if (found < 0) {
        return NULL;
    }
    return PyBool_FromLong(found);
}

/* ---- the payloads of JSON envelopes ------------------------------------------------------ */

/* framed_slices(items, prefix, suffix) -> list | None: for a list or tuple of bytes objects
   that each start with ``prefix`` and end with ``suffix`` (bytes, the two not overlapping), the
   list of what lies between (new bytes objects); None as soon as one item is not such a bytes
   object (a null, a bytearray, another frame), before anything is made. The JsonConverter's
   batch of envelopes with one schema: ``{"schema":...,"payload":`` + payload + ``}``, checked
   and cut with memcmp where ``bytes.startswith`` through ``map`` parsed its arguments per call
   (133 ns a message for the two checks, and 57 for the slices, on 150-byte envelopes). */
static PyObject *
framed_slices(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "framed_slices(items, prefix, suffix)");
        return NULL;
    }
    PyObject *items = args[0], *prefix = args[1], *suffix = args[2];
    if (!PyList_Check(items) && !PyTuple_Check(items)) {
        PyErr_SetString(PyExc_TypeError, "framed_slices: items a list or a tuple");
        return NULL;
    }
    if (!PyBytes_Check(prefix) || !PyBytes_Check(suffix)) {
        PyErr_SetString(PyExc_TypeError, "framed_slices: prefix and suffix are bytes");
        return NULL;
    }
    const char *pre = PyBytes_AS_STRING(prefix), *suf = PyBytes_AS_STRING(suffix);
    Py_ssize_t npre = PyBytes_GET_SIZE(prefix), nsuf = PyBytes_GET_SIZE(suffix);
    Py_ssize_t n = Py_SIZE(items);
    /* Made first: a list may start a collection (and so run code); bytes objects are not
       tracked, so nothing runs from here on and ``items`` stays as it is. */
    PyObject *out = PyList_New(n);
    if (out == NULL) {
        return NULL;
    }
    PyObject *const *item = PyList_Check(items) ? ((PyListObject *)items)->ob_item
                                                 : &PyTuple_GET_ITEM(items, 0);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *b = item[i];
        if (!PyBytes_CheckExact(b)) {
            Py_DECREF(out);
            Py_RETURN_NONE;
        }
        Py_ssize_t len = PyBytes_GET_SIZE(b);
        const char *buf = PyBytes_AS_STRING(b);
        if (len < npre + nsuf || memcmp(buf, pre, (size_t)npre) != 0 ||
            memcmp(buf + len - nsuf, suf, (size_t)nsuf) != 0) {
            Py_DECREF(out);
            Py_RETURN_NONE;
        }
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *b = item[i];
        PyObject *slice = PyBytes_FromStringAndSize(PyBytes_AS_STRING(b) + npre,
                                                    PyBytes_GET_SIZE(b) - npre - nsuf);
        if (slice == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i, slice);
    }
    return out;
}

/* ---- producing a column of values ------------------------------------------------------- */

/* The C function of ``method`` when it is a C function bound to its object (a
   builtin_function_or_method) taking an argument tuple and a keyword dict (METH_VARARGS |
   METH_KEYWORDS: confluent-kafka's Producer.produce), and that object in ``self``; else NULL. */
static PyCFunctionWithKeywords
varargs_function(PyObject *method, PyObject **self)
{
    if (PyCFunction_CheckExact(method)) {
        PyCFunctionObject *f = (PyCFunctionObject *)method;
        int flags = f->m_ml->ml_flags & ~METH_COEXIST;
        if (flags == (METH_VARARGS | METH_KEYWORDS) && f->m_self != NULL) {
            *self = f->m_self;
            return (PyCFunctionWithKeywords)(void (*)(void))f->m_ml->ml_meth;
        }
    }
    return NULL;
}

/* The exception being raised, taken (a new reference; the error indicator cleared). */
static PyObject *
taken_exception(void)
{
#if PY_VERSION_HEX >= 0x030C0000
    return PyErr_GetRaisedException();
#else
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (tb != NULL) {
        PyException_SetTraceback(value, tb);
    }
    Py_XDECREF(type);
    Py_XDECREF(tb);
    return value;
#endif
}

/* The first entry of ``added`` (a dict walked from ``*pos``) whose int key is ``at`` or more:
   its key in ``*key`` and its value (borrowed) in ``*headers``; ``*key`` -1 when there is none.
   -1 with an exception for a key that is not an int. */
static int
next_added_entry(PyObject *added, Py_ssize_t *pos, Py_ssize_t at, Py_ssize_t *key,
                 PyObject **headers)
{
    PyObject *k, *v;
    *key = -1;
    while (PyDict_Next(added, pos, &k, &v)) {
        Py_ssize_t index = PyLong_AsSsize_t(k);
        if (index == -1 && PyErr_Occurred()) {
            return -1;
        }
        if (index >= at) {
            *key = index;
            *headers = v;
            return 0;
        }
    }
    return 0;
}

/* ``produce(*head, ..., headers)`` with ``value`` in head[1]: head's items, produce's defaults
   up to its seventh argument (key None, partition -1, callback and on_delivery None, timestamp
   0), ``headers`` the eighth. A new reference, or NULL with an exception. */
static PyObject *
produce_with_headers(PyObject *produce, PyCFunctionWithKeywords direct, PyObject *self,
                     PyObject *head, PyObject *value, PyObject *headers)
{
    PyObject *call = PyTuple_New(8);
    if (call == NULL) {
        return NULL;
    }
    Py_ssize_t width = PyTuple_GET_SIZE(head);
    for (Py_ssize_t k = 0; k < 7; k++) {
        PyObject *item;
        if (k == 1) {
            item = Py_NewRef(value);
        }
        else if (k < width) {
            item = Py_NewRef(PyTuple_GET_ITEM(head, k));
        }
        else if (k == 3 || k == 6) { /* partition -1 (unassigned), timestamp 0 (now) */
            item = PyLong_FromLong(k == 3 ? -1 : 0);
            if (item == NULL) {
                Py_DECREF(call);
                return NULL;
            }
        }
        else {
            item = Py_NewRef(Py_None);
        }
        PyTuple_SET_ITEM(call, k, item);
    }
    PyTuple_SET_ITEM(call, 7, Py_NewRef(headers));
    PyObject *result = direct != NULL ? direct(self, call, NULL) : PyObject_Call(produce, call, NULL);
    Py_DECREF(call);
    if (result == NULL && !PyErr_Occurred()) {
        PyErr_SetString(PyExc_SystemError, "produce returned NULL without an error");
    }
    return result;
}

/* produce_values(produce, args, values, start[, stop[, added]]) -> (stop, error):
   ``produce(*args)`` once per item of ``values`` (a list or tuple) from index ``start`` to
   ``stop`` (default: the end), with ``args[1]`` replaced by the item: ``deque(map(produce,
   repeat(args[0]), values[start:], repeat(args[2]), ...), maxlen=0)`` without map's and the
   call protocol's work per item. ``added`` (None, or a dict of ascending int keys): the item at
   an index it has is produced with that entry as its headers, ``produce``'s eighth argument
   (``args`` then at most 7 items; the ones it lacks are produce's defaults: key None,
   partition -1, callback and on_delivery None, timestamp 0), in a tuple of its own. For a C function taking
   an argument tuple (Producer.produce) that function is called directly, with one argument
   tuple reused from call to call while the callee keeps no reference to it (a new one when it
   does); anything else is called as Python calls it.

   Stops at the first call that raises: ``(i, exception)`` for the item ``i`` at fault (its
   exception taken, not raised: BufferError is the caller's back-pressure, and the caller's
   error policy decides about anything else), the items before it produced; ``(stop, None)``
   (``stop`` bounded by the length) when every item was. */
static PyObject *
produce_values(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 4 || nargs > 6) {
        PyErr_SetString(PyExc_TypeError,
                        "produce_values(produce, args, values, start[, stop[, added]])");
        return NULL;
    }
    PyObject *produce = args[0], *head = args[1], *values = args[2];
    PyObject *added = nargs == 6 && args[5] != Py_None ? args[5] : NULL;
    Py_ssize_t start = PyLong_AsSsize_t(args[3]);
    if (start == -1 && PyErr_Occurred()) {
        return NULL;
    }
    Py_ssize_t stop = PY_SSIZE_T_MAX;
    if (nargs >= 5 && args[4] != Py_None) {
        stop = PyLong_AsSsize_t(args[4]);
        if (stop == -1 && PyErr_Occurred()) {
            return NULL;
        }
    }
    if (!PyTuple_CheckExact(head) || PyTuple_GET_SIZE(head) < 2) {
        PyErr_SetString(PyExc_TypeError, "produce_values: args a tuple of 2 or more");
        return NULL;
    }
    if (!PyList_Check(values) && !PyTuple_Check(values)) {
        PyErr_SetString(PyExc_TypeError, "produce_values: values a list or a tuple");
        return NULL;
    }
    if (start < 0 || stop < start) {
        PyErr_SetString(PyExc_ValueError, "produce_values: start < 0 or stop < start");
        return NULL;
    }
    if (added != NULL && (!PyDict_CheckExact(added) || PyTuple_GET_SIZE(head) > 7)) {
        PyErr_SetString(PyExc_TypeError, "produce_values: added a dict, args at most 7 items");
        return NULL;
    }
    PyObject *self = NULL;
    PyCFunctionWithKeywords direct = varargs_function(produce, &self);
    Py_ssize_t width = PyTuple_GET_SIZE(head);
    PyObject *call = NULL; /* the argument tuple, item 1 replaced per call */
    PyObject *error = NULL;
    Py_ssize_t i = start < Py_SIZE(values) ? start : Py_SIZE(values);
    if (Py_EnterRecursiveCall(" in produce_values")) { /* once for the loop */
        return NULL;
    }
    Py_INCREF(values); /* a Python produce may change the list: read its size each time */
    Py_INCREF(produce);
    Py_XINCREF(self);
    Py_XINCREF(added);
    Py_ssize_t added_pos = 0, next_added = -1; /* the dict's next entry at or after i */
    PyObject *added_headers = NULL;
    if (added != NULL && next_added_entry(added, &added_pos, i, &next_added, &added_headers) < 0) {
        goto fail;
    }
    for (; i < Py_SIZE(values) && i < stop; i++) {
        PyObject *value = PyList_Check(values) ? PyList_GET_ITEM(values, i)
                                               : PyTuple_GET_ITEM(values, i);
        if (i == next_added) { /* with headers: a tuple of its own */
            PyObject *result = produce_with_headers(produce, direct, self, head, value,
                                                    added_headers);
            if (result == NULL) {
                error = taken_exception();
                break;
            }
            Py_DECREF(result);
            if (next_added_entry(added, &added_pos, i + 1, &next_added, &added_headers) < 0) {
                goto fail;
            }
            continue;
        }
        if (call == NULL) {
            call = PyTuple_New(width);
            if (call == NULL) {
                goto fail;
            }
            for (Py_ssize_t k = 0; k < width; k++) {
                PyTuple_SET_ITEM(call, k, Py_NewRef(PyTuple_GET_ITEM(head, k)));
            }
        }
        PyObject *old = PyTuple_GET_ITEM(call, 1);
        PyTuple_SET_ITEM(call, 1, Py_NewRef(value));
        Py_DECREF(old);
        PyObject *result = direct != NULL ? direct(self, call, NULL)
                                          : PyObject_Call(produce, call, NULL);
        if (result == NULL) {
            if (!PyErr_Occurred()) {
                PyErr_SetString(PyExc_SystemError, "produce returned NULL without an error");
            }
            error = taken_exception();
            break;
        }
        Py_DECREF(result);
        if (Py_REFCNT(call) != 1) { /* the callee kept the tuple: it must not change */
            Py_CLEAR(call);
        }
    }
    Py_LeaveRecursiveCall();
    Py_XDECREF(call);
    Py_DECREF(values);
    Py_DECREF(produce);
    Py_XDECREF(self);
    Py_XDECREF(added);
    PyObject *out = Py_BuildValue("(nO)", i, error != NULL ? error : Py_None);
    Py_XDECREF(error);
    return out;
fail:
    Py_LeaveRecursiveCall();
    Py_XDECREF(call);
    Py_DECREF(values);
    Py_DECREF(produce);
    Py_XDECREF(self);
    Py_XDECREF(added);
    return NULL;
}

/* ---- OTLP spans of trace records --------------------------------------------------------- */

/* The per-record loops of connectrt/runtime/tracing/otlp_encoding.py's RequestEncoder (_sink and
   _commit), writing the same protobuf bytes in the same field order as its Python code (which
   stays: it is the fallback and the tests' oracle). The caches (a partition's attributes, the
   kept shared parts) and the pool of random span ids stay Python objects, passed in. */

typedef struct {
    char *data;
    Py_ssize_t len;
    Py_ssize_t cap;
} OutBuf;

/* Room for ``n`` more bytes in ``buf`` (grown by half again, at least); -1 with MemoryError. */
static int
buf_reserve(OutBuf *buf, Py_ssize_t n)
{
    if (buf->len + n <= buf->cap) {
        return 0;
    }
    Py_ssize_t cap = buf->cap + buf->cap / 2;
    if (cap < buf->len + n) {
        cap = buf->len + n + 256;
    }
    char *data = PyMem_Realloc(buf->data, (size_t)cap);
    if (data == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    buf->data = data;
    buf->cap = cap;
    return 0;
}

/* Appends (callers reserved the room first). */
static inline void
buf_put(OutBuf *buf, const void *src, Py_ssize_t n)
{
    memcpy(buf->data + buf->len, src, (size_t)n);
    buf->len += n;
}

static inline void
buf_byte(OutBuf *buf, unsigned char c)
{
    buf->data[buf->len++] = (char)c;
}

/* A protobuf varint of ``v`` at ``out`` (at most 10 bytes); returns its length. */
static inline Py_ssize_t
put_varint(unsigned char *out, unsigned long long v)
{
    Py_ssize_t n = 0;
    while (v >= 0x80) {
        out[n++] = (unsigned char)((v & 0x7F) | 0x80);
        v >>= 7;
    }
    out[n++] = (unsigned char)v;
    return n;
}

static inline void
put_be64(unsigned char *out, unsigned long long v)
{
    for (int i = 7; i >= 0; i--) {
        out[i] = (unsigned char)(v & 0xFF);
        v >>= 8;
    }
}

static inline void
put_le64(unsigned char *out, unsigned long long v)
{
    for (int i = 0; i < 8; i++) {
        out[i] = (unsigned char)(v & 0xFF);
        v >>= 8;
    }
}

/* An unsigned 64-bit id or time; -1 with an exception (OverflowError for a negative or larger
   one, as int.to_bytes(8, ...) raises). */
static inline int
as_u64(PyObject *v, unsigned long long *out)
{
    if (!PyLong_Check(v)) {
        PyErr_Format(PyExc_TypeError, "an id or time is a %.100s, not an int",
                     Py_TYPE(v)->tp_name);
        return -1;
    }
    *out = PyLong_AsUnsignedLongLong(v);
    if (*out == (unsigned long long)-1 && PyErr_Occurred()) {
        return -1;
    }
    return 0;
}

/* A 128-bit trace id, big-endian, at ``out`` (16 bytes). */
static int
put_trace_id(unsigned char *out, PyObject *v)
{
    if (!PyLong_Check(v)) {
        PyErr_Format(PyExc_TypeError, "a trace id is a %.100s, not an int", Py_TYPE(v)->tp_name);
        return -1;
    }
#if PY_VERSION_HEX >= 0x030D0000
    return _PyLong_AsByteArray((PyLongObject *)v, out, 16, 0, 0, 1);
#else
    return _PyLong_AsByteArray((PyLongObject *)v, out, 16, 0, 0);
#endif
}

/* A Kafka offset as the varint of its 64-bit two's complement (Python: offset & 2**64 - 1);
   an offset outside int64 and uint64 is an OverflowError. */
static int
offset_bits(PyObject *v, unsigned long long *out)
{
    if (!PyLong_Check(v)) {
        PyErr_Format(PyExc_TypeError, "an offset is a %.100s, not an int", Py_TYPE(v)->tp_name);
        return -1;
    }
    int overflow = 0;
    long long s = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow == 0) {
        if (s == -1 && PyErr_Occurred()) {
            return -1;
        }
        *out = (unsigned long long)s;
        return 0;
    }
    if (overflow < 0) {
        PyErr_SetString(PyExc_OverflowError, "an offset under -2**63");
        return -1;
    }
    return as_u64(v, out);
}

/* The messaging.kafka.offset attribute (a span's field 9, or a link's field 4 with ``tag``
   0x22) of an offset whose varint is ``number`` (``size`` bytes): KeyValue{key, value:
   AnyValue{int_value}}, as otlp_encoding's _OFFSET_HEADS and _LINK_OFFSET_HEADS. */
#define OFFSET_KEY "messaging.kafka.offset"
#define OFFSET_KEY_LEN 22
#define OFFSET_ATTR_MAX (2 + 2 + OFFSET_KEY_LEN + 3 + 10)

static Py_ssize_t
put_offset_attribute(unsigned char *out, unsigned char tag, const unsigned char *number,
                     Py_ssize_t size)
{
    Py_ssize_t n = 0;
    out[n++] = tag;
    out[n++] = (unsigned char)(2 + OFFSET_KEY_LEN + 3 + size);
    out[n++] = 0x0a;
    out[n++] = OFFSET_KEY_LEN;
    memcpy(out + n, OFFSET_KEY, OFFSET_KEY_LEN);
    n += OFFSET_KEY_LEN;
    out[n++] = 0x12;
    out[n++] = (unsigned char)(size + 1);
    out[n++] = 0x18;
    memcpy(out + n, number, (size_t)size);
    return n + size;
}

/* Span flags (field 16, fixed32): SAMPLED | CONTEXT_HAS_IS_REMOTE, and | CONTEXT_IS_REMOTE for
   a span whose parent is remote; a link's flags are its field 6. */
static const unsigned char FLAGS_LOCAL[6] = {0x85, 0x01, 0x01, 0x01, 0x00, 0x00};
static const unsigned char FLAGS_REMOTE[6] = {0x85, 0x01, 0x01, 0x03, 0x00, 0x00};
static const unsigned char LINK_FLAGS_REMOTE[5] = {0x35, 0x01, 0x03, 0x00, 0x00};

#define CONSUMER_KIND 5
#define PRODUCER_KIND 4

/* The span id at ``*at`` of the pool (8 bytes), ``n`` of them taken: a new pool from
   ``new_pool(n)`` (a bytes object of at least n ids) when fewer than n are left, as
   RequestEncoder._ids. ``*pool`` is a new reference, replaced. */
static const unsigned char *
take_ids(PyObject **pool, Py_ssize_t *at, Py_ssize_t n, PyObject *new_pool)
{
    if (*at + 8 * n > PyBytes_GET_SIZE(*pool)) {
        PyObject *count = PyLong_FromSsize_t(n);
        if (count == NULL) {
            return NULL;
        }
        PyObject *fresh = PyObject_CallOneArg(new_pool, count);
        Py_DECREF(count);
        if (fresh == NULL) {
            return NULL;
        }
        if (!PyBytes_Check(fresh) || PyBytes_GET_SIZE(fresh) < 8 * n) {
            PyErr_SetString(PyExc_ValueError, "new_pool(n) is not bytes of n span ids");
            Py_DECREF(fresh);
            return NULL;
        }
        Py_SETREF(*pool, fresh);
        *at = 0;
    }
    const unsigned char *ids = (const unsigned char *)PyBytes_AS_STRING(*pool) + *at;
    *at += 8 * n;
    return ids;
}

/* One child span per stage piece (its name, kind and times fields) of a record whose spans
   share ``shared`` (trace id field, parent id field, attributes, flags), each with its span id
   from ``ids``: RequestEncoder._children's layout (length prefix, shared, stage, span id). */
static int
put_children(OutBuf *buf, const char *shared, Py_ssize_t shared_size, PyObject *const *stages,
             Py_ssize_t nstages, const unsigned char *ids)
{
    for (Py_ssize_t i = 0; i < nstages; i++) {
        Py_ssize_t size = PyBytes_GET_SIZE(stages[i]);
        if (buf_reserve(buf, 11 + shared_size + size + 10) < 0) {
            return -1;
        }
        unsigned char head[11];
        head[0] = 0x12;
        Py_ssize_t h = 1 + put_varint(head + 1, (unsigned long long)(10 + shared_size + size));
        buf_put(buf, head, h);
        buf_put(buf, shared, shared_size);
        buf_put(buf, PyBytes_AS_STRING(stages[i]), size);
        buf_put(buf, "\x12\x08", 2);
        buf_put(buf, ids + 8 * i, 8);
    }
    return 0;
}

/* A bytes object of ``buf``'s content; frees it. */
static PyObject *
buf_finish(OutBuf *buf)
{
    PyObject *out = PyBytes_FromStringAndSize(buf->data != NULL ? buf->data : "", buf->len);
    PyMem_Free(buf->data);
    buf->data = NULL;
    return out;
}

/* One traced record of a sink batch, read from its Python form (a sink trace record's tuple,
   or a consumed batch's chosen record with its ids drawn): what its spans are written from. */
typedef struct {
    unsigned char trace[16];
    unsigned char span[8];
    unsigned char parent[8];
    int has_parent;
    PyObject *topic;     /* borrowed */
    PyObject *partition; /* borrowed */
    PyObject *span_key;  /* borrowed: its span id as an int (the key of shared_of), or NULL */
    unsigned long long offset;
    unsigned long long own_start;
} TracedRecord;

/* The spans of one traced record ``r`` of a sink batch: its ``process <topic>`` span (from its
   own start to max(end, own start); attributes ``base``, the partition's, the offset and
   ``process``) in ``spans``, one child span per piece of ``stages`` (a tuple of bytes: a
   stage's name, kind and times fields; attributes ``stage_base``, the partition's and the
   offset: its shared part), its shared part stored in
   ``shared_of`` by its span id when ``r->span_key`` is set, else appended to ``shared_list``
   (for its offset commit span), and, with a parent, the batch span's link to it in ``links``.
   ``where_of`` holds a partition's attributes by (topic, partition); ``where_new(topic,
   partition)`` makes (and keeps) one missing. The order and bytes of
   RequestEncoder._sink_records. ``shared_buf``/``shared_cap``: scratch room, kept by the
   caller. 0, or -1 with an exception. */
static int
sink_record_spans(const TracedRecord *r, PyObject *stages, PyObject *base, PyObject *stage_base,
                  PyObject *process, unsigned long long end, PyObject *shared_of,
                  PyObject *shared_list,
                  PyObject *where_of, PyObject *where_new, PyObject **pool, Py_ssize_t *at,
                  PyObject *new_pool, OutBuf *spans, OutBuf *links, char **shared_buf,
                  Py_ssize_t *shared_cap)
{
    Py_ssize_t nstages = PyTuple_GET_SIZE(stages);
    Py_ssize_t base_size = PyBytes_GET_SIZE(base), process_size = PyBytes_GET_SIZE(process);
    Py_ssize_t stage_base_size = PyBytes_GET_SIZE(stage_base);
    unsigned char trace[18], number[10];
    trace[0] = 0x0a;
    trace[1] = 0x10;
    memcpy(trace + 2, r->trace, 16);
    if (!PyUnicode_Check(r->topic)) {
        PyErr_SetString(PyExc_TypeError, "a sink trace record's topic is not a str");
        return -1;
    }
    Py_ssize_t topic_size;
    const char *topic_utf8 = PyUnicode_AsUTF8AndSize(r->topic, &topic_size);
    if (topic_utf8 == NULL) {
        return -1;
    }
    /* the partition's attributes (a new reference: where_new may replace the cache's) */
    PyObject *key = PyTuple_Pack(2, r->topic, r->partition);
    if (key == NULL) {
        return -1;
    }
    PyObject *where = PyDict_GetItemWithError(where_of, key);
    Py_XINCREF(where);
    Py_DECREF(key);
    if (where == NULL) {
        if (PyErr_Occurred()) {
            return -1;
        }
        where = PyObject_CallFunctionObjArgs(where_new, r->topic, r->partition, NULL);
        if (where == NULL) {
            return -1;
        }
    }
    if (!PyBytes_Check(where)) {
        Py_DECREF(where);
        PyErr_SetString(PyExc_TypeError, "a partition's attributes are not bytes");
        return -1;
    }
    Py_ssize_t where_size = PyBytes_GET_SIZE(where);
    Py_ssize_t number_size = put_varint(number, r->offset);
    unsigned char offset_attr[OFFSET_ATTR_MAX];
    Py_ssize_t offset_size = put_offset_attribute(offset_attr, 0x4a, number, number_size);
    Py_ssize_t attributes_size = base_size + where_size + offset_size;

    /* the process span: trace, span id, [parent id], attributes, process, flags, middle
       (name "process <topic>", kind, start, end) */
    Py_ssize_t name_size = 8 + topic_size;
    unsigned char name_len[10];
    Py_ssize_t name_len_size = put_varint(name_len, (unsigned long long)name_size);
    Py_ssize_t middle_size = 1 + name_len_size + name_size + 2 + 9 + 9;
    Py_ssize_t tail_size = (r->has_parent ? 10 : 0) + attributes_size + process_size + 6;
    Py_ssize_t body_size = 28 + tail_size + middle_size;
    Py_ssize_t shared_size = 18 + 10 + stage_base_size + where_size + offset_size + 6;
    if (buf_reserve(spans, 11 + body_size) < 0) {
        Py_DECREF(where);
        return -1;
    }
    unsigned char head[11];
    head[0] = 0x12;
    buf_put(spans, head, 1 + put_varint(head + 1, (unsigned long long)body_size));
    buf_put(spans, trace, 18);
    buf_put(spans, "\x12\x08", 2);
    buf_put(spans, r->span, 8);
    if (r->has_parent) {
        buf_put(spans, "\x22\x08", 2);
        buf_put(spans, r->parent, 8);
    }
    buf_put(spans, PyBytes_AS_STRING(base), base_size);
    buf_put(spans, PyBytes_AS_STRING(where), where_size);
    buf_put(spans, offset_attr, offset_size);
    buf_put(spans, PyBytes_AS_STRING(process), process_size);
    buf_put(spans, r->has_parent ? FLAGS_REMOTE : FLAGS_LOCAL, 6);
    buf_byte(spans, 0x2a);
    buf_put(spans, name_len, name_len_size);
    buf_put(spans, "process ", 8);
    buf_put(spans, topic_utf8, topic_size);
    unsigned char times[20];
    times[0] = 0x30;
    times[1] = CONSUMER_KIND;
    times[2] = 0x39;
    put_le64(times + 3, r->own_start);
    times[11] = 0x41;
    put_le64(times + 12, end > r->own_start ? end : r->own_start);
    buf_put(spans, times, 20);

    /* the shared part: trace, the record's span id as the parent, attributes, flags */
    if (*shared_cap < shared_size) {
        char *grown = PyMem_Realloc(*shared_buf, (size_t)shared_size);
        if (grown == NULL) {
            Py_DECREF(where);
            PyErr_NoMemory();
            return -1;
        }
        *shared_buf = grown;
        *shared_cap = shared_size;
    }
    char *s = *shared_buf;
    memcpy(s, trace, 18);
    memcpy(s + 18, "\x22\x08", 2);
    memcpy(s + 20, r->span, 8);
    memcpy(s + 28, PyBytes_AS_STRING(stage_base), (size_t)stage_base_size);
    memcpy(s + 28 + stage_base_size, PyBytes_AS_STRING(where), (size_t)where_size);
    memcpy(s + 28 + stage_base_size + where_size, offset_attr, (size_t)offset_size);
    memcpy(s + shared_size - 6, FLAGS_LOCAL, 6);
    Py_DECREF(where);
    PyObject *shared = PyBytes_FromStringAndSize(s, shared_size);
    if (shared == NULL) {
        return -1;
    }
    int stored = r->span_key != NULL ? PyDict_SetItem(shared_of, r->span_key, shared)
                                     : PyList_Append(shared_list, shared);
    Py_DECREF(shared);
    if (stored < 0) {
        return -1;
    }
    if (nstages) {
        const unsigned char *ids = take_ids(pool, at, nstages, new_pool);
        if (ids == NULL ||
            put_children(spans, s, shared_size, &PyTuple_GET_ITEM(stages, 0), nstages, ids) < 0) {
            return -1;
        }
    }
    if (r->has_parent) { /* the batch span's link: trace, parent's span id, offset, flags */
        Py_ssize_t link_size = 18 + 10 + offset_size + 5;
        if (buf_reserve(links, 2 + link_size) < 0) {
            return -1;
        }
        buf_byte(links, 0x6a);
        buf_byte(links, (unsigned char)link_size); /* under 128 */
        buf_put(links, trace, 18);
        buf_put(links, "\x12\x08", 2);
        buf_put(links, r->parent, 8);
        put_offset_attribute(offset_attr, 0x22, number, number_size);
        buf_put(links, offset_attr, offset_size);
        buf_put(links, LINK_FLAGS_REMOTE, 5);
    }
    return 0;
}

/* A sink trace record's ``(trace_id, span_id, parent, topic, partition, offset, own_start,
   ...)`` tuple read into ``r`` (ints checked as int.to_bytes would); 0, or -1 with an
   exception. */
static int
traced_record_of(PyObject *t, TracedRecord *r)
{
    if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) < 7) {
        PyErr_SetString(PyExc_TypeError, "a sink trace record is not a tuple of 7 items");
        return -1;
    }
    unsigned long long id;
    PyObject *parent = PyTuple_GET_ITEM(t, 2);
    if (put_trace_id(r->trace, PyTuple_GET_ITEM(t, 0)) < 0 ||
        as_u64(PyTuple_GET_ITEM(t, 1), &id) < 0 || offset_bits(PyTuple_GET_ITEM(t, 5), &r->offset) < 0 ||
        as_u64(PyTuple_GET_ITEM(t, 6), &r->own_start) < 0) {
        return -1;
    }
    put_be64(r->span, id);
    r->has_parent = PyObject_IsTrue(parent);
    if (r->has_parent < 0) {
        return -1;
    }
    if (r->has_parent) {
        unsigned long long pid;
        if (as_u64(parent, &pid) < 0) {
            return -1;
        }
        put_be64(r->parent, pid);
    }
    r->topic = PyTuple_GET_ITEM(t, 3);
    r->partition = PyTuple_GET_ITEM(t, 4);
    r->span_key = PyTuple_GET_ITEM(t, 1);
    return 0;
}

/* A string attribute's or a span name's text (UTF-8, kept by the str); NULL with TypeError
   for anything else. */
static const char *
utf8_of(PyObject *text, Py_ssize_t *size, const char *what)
{
    if (!PyUnicode_Check(text)) {
        PyErr_Format(PyExc_TypeError, "%s is a %.100s, not a str", what, Py_TYPE(text)->tp_name);
        return NULL;
    }
    return PyUnicode_AsUTF8AndSize(text, size);
}

/* A span's name, kind and times fields (5 to 8): otlp_encoding's _middle. */
static PyObject *
stage_piece_of(PyObject *name, int kind, unsigned long long t0, unsigned long long t1)
{
    Py_ssize_t size;
    const char *text = utf8_of(name, &size, "a stage's name");
    if (text == NULL) {
        return NULL;
    }
    unsigned char len[10];
    Py_ssize_t len_size = put_varint(len, (unsigned long long)size);
    PyObject *piece = PyBytes_FromStringAndSize(NULL, 1 + len_size + size + 20);
    if (piece == NULL) {
        return NULL;
    }
    unsigned char *out = (unsigned char *)PyBytes_AS_STRING(piece);
    out[0] = 0x2a;
    memcpy(out + 1, len, (size_t)len_size);
    memcpy(out + 1 + len_size, text, (size_t)size);
    out += 1 + len_size + size;
    out[0] = 0x30;
    out[1] = (unsigned char)kind;
    out[2] = 0x39;
    put_le64(out + 3, t0);
    out[11] = 0x41;
    put_le64(out + 12, t1);
    return piece;
}

/* stage_piece_of with the times as Python ints (checked). */
static PyObject *
stage_piece(PyObject *name, int kind, PyObject *start, PyObject *end)
{
    unsigned long long t0, t1;
    if (as_u64(start, &t0) < 0 || as_u64(end, &t1) < 0) {
        return NULL;
    }
    return stage_piece_of(name, kind, t0, t1);
}

/* An int attribute (a span's field 9: KeyValue{key, value: AnyValue{int_value}}, the value's
   64-bit two's complement; a bool's AnyValue{bool_value}) as otlp_wire.encode_attributes
   writes it, for a key under 100 bytes. */
static int
put_int_attribute(OutBuf *buf, const char *key, PyObject *value)
{
    if (!PyLong_Check(value)) {
        PyErr_Format(PyExc_TypeError, "%s is a %.100s, not an int", key, Py_TYPE(value)->tp_name);
        return -1;
    }
    unsigned char any[11];
    Py_ssize_t any_size;
    if (PyBool_Check(value)) {
        any[0] = 0x10;
        any[1] = value == Py_True;
        any_size = 2;
    }
    else {
        unsigned long long v = PyLong_AsUnsignedLongLongMask(value);
        if (v == (unsigned long long)-1 && PyErr_Occurred()) {
            return -1;
        }
        any[0] = 0x18;
        any_size = 1 + put_varint(any + 1, v);
    }
    Py_ssize_t key_size = (Py_ssize_t)strlen(key);
    if (buf_reserve(buf, 6 + key_size + any_size) < 0) {
        return -1;
    }
    buf_byte(buf, 0x4a);
    buf_byte(buf, (unsigned char)(4 + key_size + any_size));
    buf_byte(buf, 0x0a);
    buf_byte(buf, (unsigned char)key_size);
    buf_put(buf, key, key_size);
    buf_byte(buf, 0x12);
    buf_byte(buf, (unsigned char)any_size);
    buf_put(buf, any, any_size);
    return 0;
}

#define INTERNAL_KIND 1

/* The head of a sink batch's spans, then its records' (``spans``, from sink_record_spans): the
   batch span (trace ``trace``, id ``batch_span``, name "process <topic> batch", from ``start``
   to ``end``; its attributes ``base``, ``process``, ``topic_attribute`` (the encoded
   messaging.destination.name), its ``size`` and ``ntraced`` traced records; its ``links``), and
   its consume span (the stage piece ``consume``, a child of the batch span; its span id from
   the pool, after the records'). A new bytes object, or NULL with an exception. */
static PyObject *
sink_batch_spans(const unsigned char *batch_trace, const unsigned char *batch_span,
                 unsigned long long start, unsigned long long end, PyObject *topic,
                 PyObject *size, Py_ssize_t ntraced, PyObject *base, PyObject *topic_attribute,
                 PyObject *process, PyObject *consume, const OutBuf *links, const OutBuf *spans,
                 PyObject **pool, Py_ssize_t *at, PyObject *new_pool)
{
    unsigned char trace[18];
    trace[0] = 0x0a;
    trace[1] = 0x10;
    memcpy(trace + 2, batch_trace, 16);
    Py_ssize_t topic_size;
    const char *topic_utf8 = utf8_of(topic, &topic_size, "a sink record's topic");
    if (topic_utf8 == NULL) {
        return NULL;
    }
    Py_ssize_t name_size = 8 + topic_size + 6;
    unsigned char name_len[10];
    Py_ssize_t name_len_size = put_varint(name_len, (unsigned long long)name_size);
    PyObject *traced = PyLong_FromSsize_t(ntraced);
    if (traced == NULL) {
        return NULL;
    }
    OutBuf counts = {NULL, 0, 0}; /* the batch's size and traced records attributes */
    int counted = put_int_attribute(&counts, "messaging.batch.message_count", size);
    if (counted == 0) {
        counted = put_int_attribute(&counts, "connectrt.traced_records", traced);
    }
    Py_DECREF(traced);
    Py_ssize_t base_size = PyBytes_GET_SIZE(base), process_size = PyBytes_GET_SIZE(process);
    Py_ssize_t topic_attr_size = PyBytes_GET_SIZE(topic_attribute);
    Py_ssize_t middle_size = 1 + name_len_size + name_size + 20;
    Py_ssize_t body_size = 28 + middle_size + base_size + process_size + topic_attr_size +
                           counts.len + links->len + 6;
    Py_ssize_t receive_size = 28 + base_size + topic_attr_size + 6;
    Py_ssize_t consume_size = PyBytes_GET_SIZE(consume);
    OutBuf head = {NULL, 0, 0};
    if (counted < 0 || buf_reserve(&head, 11 + body_size + 11 + receive_size + consume_size + 10) <
                           0) {
        PyMem_Free(counts.data);
        PyMem_Free(head.data);
        return NULL;
    }
    unsigned char varint_buf[10];
    buf_byte(&head, 0x12);
    buf_put(&head, varint_buf, put_varint(varint_buf, (unsigned long long)body_size));
    buf_put(&head, trace, 18);
    buf_put(&head, "\x12\x08", 2);
    buf_put(&head, batch_span, 8);
    buf_byte(&head, 0x2a);
    buf_put(&head, name_len, name_len_size);
    buf_put(&head, "process ", 8);
    buf_put(&head, topic_utf8, topic_size);
    buf_put(&head, " batch", 6);
    unsigned char times[20];
    times[0] = 0x30;
    times[1] = CONSUMER_KIND;
    times[2] = 0x39;
    put_le64(times + 3, start);
    times[11] = 0x41;
    put_le64(times + 12, end);
    buf_put(&head, times, 20);
    buf_put(&head, PyBytes_AS_STRING(base), base_size);
    buf_put(&head, PyBytes_AS_STRING(process), process_size);
    buf_put(&head, PyBytes_AS_STRING(topic_attribute), topic_attr_size);
    buf_put(&head, counts.data, counts.len);
    PyMem_Free(counts.data);
    if (links->len) {
        buf_put(&head, links->data, links->len);
    }
    buf_put(&head, FLAGS_LOCAL, 6);

    /* the consume span: a child of the batch span (its shared part: trace, the batch span's
       id as its parent, base, topic attribute, flags) */
    char *receive = PyMem_Malloc((size_t)receive_size);
    if (receive == NULL) {
        PyMem_Free(head.data);
        PyErr_NoMemory();
        return NULL;
    }
    memcpy(receive, trace, 18);
    memcpy(receive + 18, "\x22\x08", 2);
    memcpy(receive + 20, batch_span, 8);
    memcpy(receive + 28, PyBytes_AS_STRING(base), (size_t)base_size);
    memcpy(receive + 28 + base_size, PyBytes_AS_STRING(topic_attribute),
           (size_t)topic_attr_size);
    memcpy(receive + 28 + base_size + topic_attr_size, FLAGS_LOCAL, 6);
    const unsigned char *ids = take_ids(pool, at, 1, new_pool);
    int put = ids == NULL ? -1 : put_children(&head, receive, receive_size, &consume, 1, ids);
    PyMem_Free(receive);
    PyObject *out = put < 0 ? NULL : PyBytes_FromStringAndSize(NULL, head.len + spans->len);
    if (out != NULL) { /* the head, then the records' spans: one copy of them */
        memcpy(PyBytes_AS_STRING(out), head.data, (size_t)head.len);
        if (spans->len) {
            memcpy(PyBytes_AS_STRING(out) + head.len, spans->data, (size_t)spans->len);
        }
    }
    PyMem_Free(head.data);
    return out;
}

/* otlp_sink_batch(record, base, stage_base, topic_attribute, process, shared_of, where_of,
   where_new, pool, at, new_pool) -> (spans, pool, at): RequestEncoder._sink, a ``sink`` trace record
   ``("sink", base_attributes, topic, size, timeline, (batch trace id, batch span id),
   records, ...)`` made into its spans (concatenated, each a ScopeSpans ``spans`` field): the
   batch span (its attributes ``base``, ``process``, ``topic_attribute`` (the encoded
   messaging.destination.name), its size and how many records are traced, and its links to the
   records' parents), its consume span (the timeline's first stage), then per traced record its
   span and one child span per later stage (see sink_record_spans: ``stage_base`` the child
   spans' attributes of the task; the shared parts stored in ``shared_of``). The span ids come from ``pool`` at ``at`` (records first, then the consume
   span's), as in Python. */
static PyObject *
otlp_sink_batch(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 11) {
        PyErr_SetString(PyExc_TypeError,
                        "otlp_sink_batch(record, base, stage_base, topic_attribute, process, "
                        "shared_of, where_of, where_new, pool, at, new_pool)");
        return NULL;
    }
    PyObject *record = args[0], *base = args[1], *stage_base = args[2];
    PyObject *topic_attribute = args[3], *process = args[4];
    PyObject *shared_of = args[5], *where_of = args[6], *where_new = args[7];
    PyObject *new_pool = args[10];
    if (!PyTuple_Check(record) || PyTuple_GET_SIZE(record) < 7 || !PyBytes_Check(base) ||
        !PyBytes_Check(stage_base) || !PyBytes_Check(topic_attribute) ||
        !PyBytes_Check(process) || !PyDict_Check(shared_of) || !PyDict_Check(where_of) ||
        !PyBytes_Check(args[8])) {
        PyErr_SetString(PyExc_TypeError,
                        "otlp_sink_batch: record a tuple of 7 items, base, stage_base, "
                        "topic_attribute, process and pool bytes, shared_of and where_of dicts");
        return NULL;
    }
    Py_ssize_t at = PyLong_AsSsize_t(args[9]);
    if (at == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (at < 0) {
        PyErr_SetString(PyExc_ValueError, "otlp_sink_batch: at < 0");
        return NULL;
    }
    PyObject *topic = PyTuple_GET_ITEM(record, 2), *size = PyTuple_GET_ITEM(record, 3);
    PyObject *timeline = PyTuple_GET_ITEM(record, 4), *batch_ids = PyTuple_GET_ITEM(record, 5);
    if ((!PyList_Check(timeline) && !PyTuple_Check(timeline)) || Py_SIZE(timeline) < 1 ||
        !PyTuple_Check(batch_ids) || PyTuple_GET_SIZE(batch_ids) != 2) {
        PyErr_SetString(PyExc_TypeError, "otlp_sink_batch: a sink record's timeline is not a "
                                         "list of stages, or its batch ids not a pair");
        return NULL;
    }
    /* the timeline: a tuple of its stages (its list could change in Python code called) */
    PyObject *stages_in = PySequence_Tuple(timeline);
    PyObject *seq = PySequence_Tuple(PyTuple_GET_ITEM(record, 6));
    PyObject *pool = Py_NewRef(args[8]);
    PyObject *stages = NULL, *consume = NULL, *result = NULL, *out = NULL;
    OutBuf spans = {NULL, 0, 0}, links = {NULL, 0, 0};
    char *shared_buf = NULL;
    Py_ssize_t shared_cap = 0;
    if (stages_in == NULL || seq == NULL) {
        goto done;
    }
    Py_ssize_t nstages = PyTuple_GET_SIZE(stages_in);
    unsigned long long end = 0, start;
    for (Py_ssize_t i = 0; i < nstages; i++) {
        PyObject *t = PyTuple_GET_ITEM(stages_in, i);
        unsigned long long t1;
        if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != 3) {
            PyErr_SetString(PyExc_TypeError, "a stage is not a (name, start, end) tuple");
            goto done;
        }
        if (as_u64(PyTuple_GET_ITEM(t, 2), &t1) < 0) {
            goto done;
        }
        end = i == 0 || t1 > end ? t1 : end;
    }
    PyObject *first = PyTuple_GET_ITEM(stages_in, 0);
    if (as_u64(PyTuple_GET_ITEM(first, 1), &start) < 0) {
        goto done;
    }
    stages = PyTuple_New(nstages - 1);
    if (stages == NULL) {
        goto done;
    }
    for (Py_ssize_t i = 1; i < nstages; i++) {
        PyObject *t = PyTuple_GET_ITEM(stages_in, i);
        PyObject *piece = stage_piece(PyTuple_GET_ITEM(t, 0), INTERNAL_KIND,
                                      PyTuple_GET_ITEM(t, 1), PyTuple_GET_ITEM(t, 2));
        if (piece == NULL) {
            goto done;
        }
        PyTuple_SET_ITEM(stages, i - 1, piece);
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(seq); i++) {
        TracedRecord r;
        if (traced_record_of(PyTuple_GET_ITEM(seq, i), &r) < 0 ||
            sink_record_spans(&r, stages, base, stage_base, process, end, shared_of, NULL,
                              where_of, where_new, &pool, &at, new_pool, &spans, &links,
                              &shared_buf, &shared_cap) < 0) {
            goto done;
        }
    }
    unsigned char batch_trace[16], batch_span[8];
    unsigned long long span_id;
    if (put_trace_id(batch_trace, PyTuple_GET_ITEM(batch_ids, 0)) < 0 ||
        as_u64(PyTuple_GET_ITEM(batch_ids, 1), &span_id) < 0) {
        goto done;
    }
    put_be64(batch_span, span_id);
    if (!PyUnicode_Check(topic)) {
        PyErr_SetString(PyExc_TypeError, "a sink record's topic is not a str");
        goto done;
    }
    consume = stage_piece(PyTuple_GET_ITEM(first, 0), INTERNAL_KIND, PyTuple_GET_ITEM(first, 1),
                          PyTuple_GET_ITEM(first, 2));
    if (consume == NULL) {
        goto done;
    }
    out = sink_batch_spans(batch_trace, batch_span, start, end, topic, size,
                           PyTuple_GET_SIZE(seq), base, topic_attribute, process, consume, &links,
                           &spans, &pool, &at, new_pool);
    if (out != NULL) {
        result = Py_BuildValue("(NOn)", out, pool, at);
    }
done:
    Py_XDECREF(stages_in);
    Py_XDECREF(seq);
    Py_XDECREF(stages);
    Py_XDECREF(consume);
    PyMem_Free(spans.data);
    PyMem_Free(links.data);
    PyMem_Free(shared_buf);
    Py_DECREF(pool);
    return result;
}

/* otlp_commit_spans(records, middle, shared_of, shared_new, pool, at, new_pool) ->
   (spans, pool, at): RequestEncoder._commit's loop, one ``offset commit`` child span (stage
   piece ``middle``) per committed record: a bytes item is the record's shared part itself
   (otlp_consumed keeps them so), a sink record's (more than 4 items) is taken out of
   ``shared_of`` by its span id, else ``shared_new(record)`` makes it (a source record's, or one
   let go of). */
static PyObject *
otlp_commit_spans(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 7) {
        PyErr_SetString(PyExc_TypeError, "otlp_commit_spans(records, middle, shared_of, "
                                         "shared_new, pool, at, new_pool)");
        return NULL;
    }
    PyObject *records = args[0], *middle = args[1], *shared_of = args[2], *shared_new = args[3];
    PyObject *new_pool = args[6];
    if (!PySequence_Check(records) || !PyBytes_Check(middle) || !PyDict_Check(shared_of) ||
        !PyBytes_Check(args[4])) {
        PyErr_SetString(PyExc_TypeError, "otlp_commit_spans: records a sequence, middle and "
                                         "pool bytes, shared_of a dict");
        return NULL;
    }
    Py_ssize_t at = PyLong_AsSsize_t(args[5]);
    if (at == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (at < 0) {
        PyErr_SetString(PyExc_ValueError, "otlp_commit_spans: at < 0");
        return NULL;
    }
    /* a tuple of the records: shared_new, Python code, could change a list of them */
    PyObject *seq = PySequence_Tuple(records);
    if (seq == NULL) {
        return NULL;
    }
    PyObject *pool = Py_NewRef(args[4]);
    OutBuf spans = {NULL, 0, 0};
    /* room for the spans, about (a shared part is some 300 bytes): the buffer seldom grows */
    if (buf_reserve(&spans, PyTuple_GET_SIZE(seq) * (PyBytes_GET_SIZE(middle) + 330)) < 0) {
        goto error;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(seq); i++) {
        PyObject *r = PyTuple_GET_ITEM(seq, i);
        PyObject *shared = NULL;
        if (PyBytes_CheckExact(r)) { /* a shared part itself (otlp_consumed's) */
            shared = Py_NewRef(r);
        }
        else if (!PyTuple_Check(r) || PyTuple_GET_SIZE(r) < 2) {
            PyErr_SetString(PyExc_TypeError, "a committed trace record is not a tuple");
            goto error;
        }
        else if (PyTuple_GET_SIZE(r) > 4) {
            PyObject *span_id = PyTuple_GET_ITEM(r, 1);
            shared = PyDict_GetItemWithError(shared_of, span_id);
            if (shared != NULL) {
                Py_INCREF(shared);
                if (PyDict_DelItem(shared_of, span_id) < 0) {
                    Py_DECREF(shared);
                    goto error;
                }
            }
            else if (PyErr_Occurred()) {
                goto error;
            }
        }
        if (shared == NULL) {
            shared = PyObject_CallOneArg(shared_new, r);
            if (shared == NULL) {
                goto error;
            }
        }
        if (!PyBytes_Check(shared)) {
            Py_DECREF(shared);
            PyErr_SetString(PyExc_TypeError, "a record's shared part is not bytes");
            goto error;
        }
        const unsigned char *ids = take_ids(&pool, &at, 1, new_pool);
        int put = ids == NULL ? -1
                              : put_children(&spans, PyBytes_AS_STRING(shared),
                                             PyBytes_GET_SIZE(shared), &middle, 1, ids);
        Py_DECREF(shared);
        if (put < 0) {
            goto error;
        }
    }
    Py_DECREF(seq);
    PyObject *spans_bytes = buf_finish(&spans);
    PyObject *result = NULL;
    if (spans_bytes != NULL) {
        result = Py_BuildValue("(OOn)", spans_bytes, pool, at);
        Py_DECREF(spans_bytes);
    }
    Py_DECREF(pool);
    return result;
error:
    Py_DECREF(seq);
    PyMem_Free(spans.data);
    Py_DECREF(pool);
    return NULL;
}

/* ---- a sink batch's chosen records, made into trace records ------------------------------- */

/* The value of each byte as a hex digit, or -1 (filled by PyInit__speedups). */
static signed char hex_values[256];

static void
fill_hex_values(void)
{
    for (int c = 0; c < 256; c++) {
        hex_values[c] = (signed char)(c >= '0' && c <= '9'   ? c - '0'
                                      : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                      : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                                             : -1);
    }
}

/* ``n`` bytes from the ``2n`` hex digits at ``hex``; -1 when one is not a hex digit. */
static int
unhex(unsigned char *out, const unsigned char *hex, Py_ssize_t n)
{
    int bad = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int hi = hex_values[hex[2 * i]], lo = hex_values[hex[2 * i + 1]];
        bad |= hi | lo; /* negative when one is not a digit */
        out[i] = (unsigned char)(((unsigned)hi << 4) | ((unsigned)lo & 0xFu));
    }
    return bad < 0 ? -1 : 0;
}

/* Whether all ``n`` bytes at ``p`` are zero. */
static inline int
all_zero(const unsigned char *p, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        if (p[i]) {
            return 0;
        }
    }
    return 1;
}

/* ``(trace id, span id, flags)`` of a W3C traceparent value in the form the OpenTelemetry Kafka
   instrumentations write (bytes ``00-<32 hex>-<16 hex>-<2 hex>``, ids not zero): 1 with the ids
   set as new references, 0 when ``value`` has another form (the caller asks tracing.py's
   trace_context, which reads every form), -1 with an exception. */
static int
fast_traceparent(PyObject *value, PyObject **trace_id, PyObject **span_id, int *flags)
{
    if (!PyBytes_CheckExact(value) || PyBytes_GET_SIZE(value) != 55) {
        return 0;
    }
    const unsigned char *v = (const unsigned char *)PyBytes_AS_STRING(value);
    unsigned char raw[26];
    if (v[2] != '-' || v[35] != '-' || v[52] != '-' || unhex(raw, v, 1) < 0 || raw[0] != 0 ||
        unhex(raw + 1, v + 3, 16) < 0 || unhex(raw + 17, v + 36, 8) < 0 ||
        unhex(raw + 25, v + 53, 1) < 0 || all_zero(raw + 1, 16) || all_zero(raw + 17, 8)) {
        return 0;
    }
    *trace_id = _PyLong_FromByteArray(raw + 1, 16, 0, 0);
    if (*trace_id == NULL) {
        return -1;
    }
    *span_id = _PyLong_FromByteArray(raw + 17, 8, 0, 0);
    if (*span_id == NULL) {
        Py_CLEAR(*trace_id);
        return -1;
    }
    *flags = raw[25];
    return 1;
}

/* ``new_id(bits) or 1`` (a new reference), as tracing.py draws ids. */
static PyObject *
draw_id(PyObject *new_id, PyObject *bits)
{
    PyObject *id = PyObject_CallOneArg(new_id, bits);
    if (id == NULL) {
        return NULL;
    }
    int nonzero = PyObject_IsTrue(id);
    if (nonzero < 0) {
        Py_DECREF(id);
        return NULL;
    }
    if (!nonzero) {
        Py_SETREF(id, PyLong_FromLong(1));
    }
    return id;
}

/* trace_records(chosen, parent_based, arrived, new_id, parse) -> list: the loop of
   connectrt/runtime/tracing/tracer.py's sink_batch. ``chosen`` holds per chosen record its
   traceparent header value, topic, partition, offset and timestamp (ms), flat; each becomes
   ``(trace id, span id, parent id, topic, partition, offset, own start)``: the parent's trace
   id and span id from its traceparent (``parse(value)``, tracing.trace_context, reads the forms
   the fast path here does not: None, or a (trace id, span id, flags) tuple), a new trace
   (``new_id(128) or 1``, parent 0) without one, left out when ``parent_based`` and its producer
   did not sample it; its span id ``new_id(64) or 1``; its start the later of ``arrived`` (ns)
   and its timestamp. Ids are drawn in the Python loop's order. */
static PyObject *
trace_records(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError,
                        "trace_records(chosen, parent_based, arrived, new_id, parse)");
        return NULL;
    }
    PyObject *chosen = args[0], *arrived = args[2], *new_id = args[3], *parse = args[4];
    if (!PyList_CheckExact(chosen) || PyList_GET_SIZE(chosen) % 5 != 0 || !PyLong_Check(arrived)) {
        PyErr_SetString(PyExc_TypeError,
                        "trace_records: chosen a list of 5 items a record, arrived an int");
        return NULL;
    }
    int parent_based = PyObject_IsTrue(args[1]);
    if (parent_based < 0) {
        return NULL;
    }
    PyObject *seq = PySequence_Tuple(chosen); /* new_id and parse are Python code */
    PyObject *out = PyList_New(0);
    PyObject *bits128 = PyLong_FromLong(128), *bits64 = PyLong_FromLong(64);
    PyObject *million = PyLong_FromLong(1000000), *zero = PyLong_FromLong(0);
    if (seq == NULL || out == NULL || bits128 == NULL || bits64 == NULL || million == NULL ||
        zero == NULL) {
        goto error;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(seq); i += 5) {
        PyObject *header = PyTuple_GET_ITEM(seq, i);
        PyObject *trace_id = NULL, *parent_id = NULL;
        int flags = 0;
        int fast = fast_traceparent(header, &trace_id, &parent_id, &flags);
        if (fast < 0) {
            goto error;
        }
        if (fast == 0) {
            PyObject *parsed = PyObject_CallOneArg(parse, header);
            if (parsed == NULL) {
                goto error;
            }
            if (parsed != Py_None) {
                if (!PyTuple_Check(parsed) || PyTuple_GET_SIZE(parsed) != 3) {
                    Py_DECREF(parsed);
                    PyErr_SetString(PyExc_TypeError, "parse(value) is not None or 3 items");
                    goto error;
                }
                long f = PyLong_AsLong(PyTuple_GET_ITEM(parsed, 2));
                if (f == -1 && PyErr_Occurred()) {
                    Py_DECREF(parsed);
                    goto error;
                }
                flags = (int)(f & 0xFF);
                trace_id = Py_NewRef(PyTuple_GET_ITEM(parsed, 0));
                parent_id = Py_NewRef(PyTuple_GET_ITEM(parsed, 1));
            }
            Py_DECREF(parsed);
        }
        if (trace_id == NULL) { /* no parent: a trace of its own */
            trace_id = draw_id(new_id, bits128);
            if (trace_id == NULL) {
                goto error;
            }
            parent_id = Py_NewRef(zero);
        }
        else if (parent_based && !(flags & 1)) {
            Py_DECREF(trace_id);
            Py_DECREF(parent_id);
            continue; /* its producer did not sample it */
        }
        /* its start: the batch's arrival, or its timestamp when later (a producer's clock ahead) */
        PyObject *stamp = PyNumber_Multiply(PyTuple_GET_ITEM(seq, i + 4), million);
        PyObject *span_id = stamp == NULL ? NULL : draw_id(new_id, bits64);
        if (span_id == NULL) {
            Py_XDECREF(stamp);
            Py_DECREF(trace_id);
            Py_DECREF(parent_id);
            goto error;
        }
        int later = PyObject_RichCompareBool(arrived, stamp, Py_GE);
        if (later < 0) {
            Py_DECREF(stamp);
            Py_DECREF(span_id);
            Py_DECREF(trace_id);
            Py_DECREF(parent_id);
            goto error;
        }
        PyObject *start = later ? Py_NewRef(arrived) : Py_NewRef(stamp);
        Py_DECREF(stamp);
        PyObject *record = PyTuple_New(7);
        if (record == NULL) {
            Py_DECREF(start);
            Py_DECREF(span_id);
            Py_DECREF(trace_id);
            Py_DECREF(parent_id);
            goto error;
        }
        PyTuple_SET_ITEM(record, 0, trace_id);
        PyTuple_SET_ITEM(record, 1, span_id);
        PyTuple_SET_ITEM(record, 2, parent_id);
        for (int k = 1; k <= 3; k++) { /* topic, partition, offset */
            PyTuple_SET_ITEM(record, 2 + k, Py_NewRef(PyTuple_GET_ITEM(seq, i + k)));
        }
        PyTuple_SET_ITEM(record, 6, start);
        int appended = PyList_Append(out, record);
        Py_DECREF(record);
        if (appended < 0) {
            goto error;
        }
    }
    Py_DECREF(seq);
    Py_DECREF(bits128);
    Py_DECREF(bits64);
    Py_DECREF(million);
    Py_DECREF(zero);
    return out;
error:
    Py_XDECREF(seq);
    Py_XDECREF(out);
    Py_XDECREF(bits128);
    Py_XDECREF(bits64);
    Py_XDECREF(million);
    Py_XDECREF(zero);
    return NULL;
}

/* ---- a consumed batch, made into its spans in one call ------------------------------------ */

/* A W3C traceparent in the form fast_traceparent reads, its ids and flags into ``trace`` (16
   bytes), ``span`` (8) and ``flags``: 1, or 0 for another form. */
static int
raw_traceparent(PyObject *value, unsigned char *trace, unsigned char *span, int *flags)
{
    if (!PyBytes_CheckExact(value) || PyBytes_GET_SIZE(value) != 55) {
        return 0;
    }
    const unsigned char *v = (const unsigned char *)PyBytes_AS_STRING(value);
    unsigned char version, f;
    if (v[2] != '-' || v[35] != '-' || v[52] != '-' || unhex(&version, v, 1) < 0 ||
        version != 0 || unhex(trace, v + 3, 16) < 0 || unhex(span, v + 36, 8) < 0 ||
        unhex(&f, v + 53, 1) < 0 || all_zero(trace, 16) || all_zero(span, 8)) {
        return 0;
    }
    *flags = f;
    return 1;
}

/* A stage of a consumed batch's timeline. */
typedef struct {
    PyObject *name; /* borrowed */
    unsigned long long start, end;
} TimedStage;

static PyObject *consume_name, *transform_prefix; /* "consume", "transform ": made once */

/* The timeline of a consumed batch, as tracer.timeline_of makes it: its consume (``start`` to
   ``arrived``), then the stage clock's ``stages`` (a dict of name: [start, end]) in order of
   their starts (stably), ``convert`` ending where the first transformation starts if that is
   sooner. A new array of ``*n`` stages (PyMem_Free it), or NULL with an exception. */
static TimedStage *
timeline_of(PyObject *stages, unsigned long long start, unsigned long long arrived,
            Py_ssize_t *n)
{
    if (!PyDict_Check(stages)) {
        PyErr_SetString(PyExc_TypeError, "a consumed batch's stages are not a dict");
        return NULL;
    }
    if (consume_name == NULL || transform_prefix == NULL) {
        Py_XSETREF(consume_name, PyUnicode_InternFromString("consume"));
        Py_XSETREF(transform_prefix, PyUnicode_InternFromString("transform "));
        if (consume_name == NULL || transform_prefix == NULL) {
            return NULL;
        }
    }
    Py_ssize_t count = PyDict_GET_SIZE(stages) + 1;
    TimedStage *out = PyMem_Malloc(sizeof(TimedStage) * (size_t)count);
    if (out == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    out[0].name = consume_name;
    out[0].start = start;
    out[0].end = arrived;
    Py_ssize_t pos = 0, k = 1, convert = -1;
    unsigned long long first_transform = 0;
    int transforms = 0;
    PyObject *name, *times;
    while (PyDict_Next(stages, &pos, &name, &times)) {
        if (!PyUnicode_Check(name) || (!PyList_Check(times) && !PyTuple_Check(times)) ||
            Py_SIZE(times) != 2) {
            PyErr_SetString(PyExc_TypeError, "a stage is not a name with [start, end]");
            goto error;
        }
        TimedStage *s = &out[k];
        if (as_u64(PySequence_Fast_GET_ITEM(times, 0), &s->start) < 0 ||
            as_u64(PySequence_Fast_GET_ITEM(times, 1), &s->end) < 0) {
            goto error;
        }
        s->name = name;
        if (PyUnicode_CompareWithASCIIString(name, "convert") == 0) {
            convert = k;
        }
        else {
            Py_ssize_t prefixed = PyUnicode_Tailmatch(name, transform_prefix, 0, PY_SSIZE_T_MAX, -1);
            if (prefixed < 0) {
                goto error;
            }
            if (prefixed && (!transforms || s->start < first_transform)) {
                first_transform = s->start;
                transforms = 1;
            }
        }
        k++;
    }
    if (convert > 0 && transforms && first_transform < out[convert].end) {
        out[convert].end = first_transform; /* the conversion runs the chain */
    }
    for (Py_ssize_t i = 2; i < k; i++) { /* a stable insertion sort of the few stages */
        TimedStage s = out[i];
        Py_ssize_t j = i;
        while (j > 1 && out[j - 1].start > s.start) {
            out[j] = out[j - 1];
            j--;
        }
        out[j] = s;
    }
    *n = k;
    return out;
error:
    PyMem_Free(out);
    return NULL;
}

/* ``(trace id, span id, flags)`` of ``header`` into ``r`` and ``flags``: 1 when it has a
   parent, 0 when not (``parse(value)``, tracing.trace_context, reads what raw_traceparent does
   not: None, or a (trace id, span id, flags) tuple), -1 with an exception. */
static int
parent_of(PyObject *header, PyObject *parse, TracedRecord *r, int *flags)
{
    int fast = raw_traceparent(header, r->trace, r->parent, flags);
    if (fast) {
        return 1;
    }
    PyObject *parsed = PyObject_CallOneArg(parse, header);
    if (parsed == NULL) {
        return -1;
    }
    if (parsed == Py_None) {
        Py_DECREF(parsed);
        return 0;
    }
    unsigned long long pid;
    long f;
    if (!PyTuple_Check(parsed) || PyTuple_GET_SIZE(parsed) != 3) {
        PyErr_SetString(PyExc_TypeError, "parse(value) is not None or 3 items");
        goto error;
    }
    f = PyLong_AsLong(PyTuple_GET_ITEM(parsed, 2));
    if ((f == -1 && PyErr_Occurred()) || put_trace_id(r->trace, PyTuple_GET_ITEM(parsed, 0)) < 0 ||
        as_u64(PyTuple_GET_ITEM(parsed, 1), &pid) < 0) {
        goto error;
    }
    put_be64(r->parent, pid);
    *flags = (int)(f & 0xFF);
    Py_DECREF(parsed);
    return 1;
error:
    Py_DECREF(parsed);
    return -1;
}

/* A chosen record's start: the batch's arrival, or its timestamp (ms) when later (a producer's
   clock ahead), as tracer._trace_records; 0, or -1 with an exception (OverflowError for a
   timestamp past 2**64 ns). */
static int
own_start_of(PyObject *stamp, unsigned long long arrived, unsigned long long *out)
{
    if (!PyLong_Check(stamp)) {
        PyErr_SetString(PyExc_TypeError, "a chosen record's timestamp is not an int");
        return -1;
    }
    int overflow = 0;
    long long ms = PyLong_AsLongLongAndOverflow(stamp, &overflow);
    if (ms == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (overflow < 0 || (overflow == 0 && ms <= 0)) {
        *out = arrived;
        return 0;
    }
    if (overflow > 0 || (unsigned long long)ms > 18446744073709ULL) {
        PyErr_SetString(PyExc_OverflowError, "a record's timestamp is past 2**64 ns");
        return -1;
    }
    unsigned long long ns = (unsigned long long)ms * 1000000ULL;
    *out = arrived >= ns ? arrived : ns;
    return 0;
}

/* otlp_consumed(record, base, stage_base, topic_of, process, where_of, where_new, pool, at,
   new_pool, parse) -> (spans, shared, pool, at, count): RequestEncoder._consumed, a ``consumed`` trace
   record ``("consumed", base_attributes, size, start, arrived, stages, chosen, parent_based,
   key)`` made into the spans of its ``sink`` record (tracer.sink_batch and otlp_sink_batch in
   one pass, without the sink record's Python objects): per chosen record (its traceparent
   header value, topic, partition, offset and timestamp, flat in ``chosen``), its parent read
   (left out when ``parent_based`` and its producer did not sample it); its ids drawn from the
   pool (a trace id of 16 bytes first for one without a parent, then its span id), then the
   batch's trace id and span id (24 bytes), then as otlp_sink_batch. ``topic_of(topic)`` is
   the encoded messaging.destination.name of the first traced record's topic. ``shared``: the
   traced records' shared parts, in order, for their offset commit spans; ``count``: the spans
   made (0, and no ids drawn, when no chosen record is traced). */
static PyObject *
otlp_consumed(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 11) {
        PyErr_SetString(PyExc_TypeError,
                        "otlp_consumed(record, base, stage_base, topic_of, process, where_of, "
                        "where_new, pool, at, new_pool, parse)");
        return NULL;
    }
    PyObject *record = args[0], *base = args[1], *stage_base = args[2], *topic_of = args[3];
    PyObject *process = args[4], *where_of = args[5], *where_new = args[6];
    PyObject *new_pool = args[9], *parse = args[10];
    if (!PyTuple_Check(record) || PyTuple_GET_SIZE(record) < 8 || !PyBytes_Check(base) ||
        !PyBytes_Check(stage_base) || !PyBytes_Check(process) || !PyDict_Check(where_of) ||
        !PyBytes_Check(args[7])) {
        PyErr_SetString(PyExc_TypeError,
                        "otlp_consumed: record a tuple of 8 items or more, base, stage_base, "
                        "process and pool bytes, where_of a dict");
        return NULL;
    }
    Py_ssize_t at = PyLong_AsSsize_t(args[8]);
    if (at == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (at < 0) {
        PyErr_SetString(PyExc_ValueError, "otlp_consumed: at < 0");
        return NULL;
    }
    PyObject *size = PyTuple_GET_ITEM(record, 2), *chosen_in = PyTuple_GET_ITEM(record, 6);
    unsigned long long start, arrived;
    if (as_u64(PyTuple_GET_ITEM(record, 3), &start) < 0 ||
        as_u64(PyTuple_GET_ITEM(record, 4), &arrived) < 0) {
        return NULL;
    }
    if (!PyList_Check(chosen_in) || PyList_GET_SIZE(chosen_in) % 5 != 0) {
        PyErr_SetString(PyExc_TypeError, "otlp_consumed: chosen a list of 5 items a record");
        return NULL;
    }
    int parent_based = PyObject_IsTrue(PyTuple_GET_ITEM(record, 7));
    if (parent_based < 0) {
        return NULL;
    }
    /* a tuple of the chosen records' fields: parse and where_new are Python code */
    PyObject *chosen = PySequence_Tuple(chosen_in);
    if (chosen == NULL) {
        return NULL;
    }
    PyObject *pool = Py_NewRef(args[7]);
    PyObject *shared = PyList_New(0), *stages = NULL, *consume = NULL, *topic_attribute = NULL;
    PyObject *result = NULL, *out = NULL;
    Py_ssize_t nchosen = PyTuple_GET_SIZE(chosen) / 5, n = 0, nstages = 0;
    TracedRecord *records = PyMem_Malloc(sizeof(TracedRecord) * (size_t)(nchosen ? nchosen : 1));
    TimedStage *timeline = NULL;
    OutBuf spans = {NULL, 0, 0}, links = {NULL, 0, 0};
    char *shared_buf = NULL;
    Py_ssize_t shared_cap = 0;
    if (shared == NULL || records == NULL) {
        if (records == NULL) {
            PyErr_NoMemory();
        }
        goto done;
    }
    for (Py_ssize_t i = 0; i < nchosen; i++) {
        PyObject *const *f = &PyTuple_GET_ITEM(chosen, 5 * i);
        TracedRecord *r = &records[n];
        int flags = 0;
        int has_parent = parent_of(f[0], parse, r, &flags);
        if (has_parent < 0) {
            goto done;
        }
        if (has_parent && parent_based && !(flags & 1)) {
            continue; /* its producer did not sample it */
        }
        r->has_parent = has_parent;
        if (offset_bits(f[3], &r->offset) < 0 || own_start_of(f[4], arrived, &r->own_start) < 0) {
            goto done;
        }
        if (!has_parent) { /* a trace of its own */
            const unsigned char *ids = take_ids(&pool, &at, 2, new_pool);
            if (ids == NULL) {
                goto done;
            }
            memcpy(r->trace, ids, 16);
        }
        const unsigned char *id = take_ids(&pool, &at, 1, new_pool);
        if (id == NULL) {
            goto done;
        }
        memcpy(r->span, id, 8);
        r->topic = f[1];
        r->partition = f[2];
        r->span_key = NULL;
        n++;
    }
    if (n == 0) {
        result = Py_BuildValue("(y#OOni)", "", (Py_ssize_t)0, shared, pool, at, 0);
        goto done;
    }
    unsigned char batch_ids[24];
    const unsigned char *ids = take_ids(&pool, &at, 3, new_pool);
    if (ids == NULL) {
        goto done;
    }
    memcpy(batch_ids, ids, 24);
    timeline = timeline_of(PyTuple_GET_ITEM(record, 5), start, arrived, &nstages);
    if (timeline == NULL) {
        goto done;
    }
    unsigned long long end = timeline[0].end;
    for (Py_ssize_t i = 1; i < nstages; i++) {
        end = timeline[i].end > end ? timeline[i].end : end;
    }
    stages = PyTuple_New(nstages - 1);
    if (stages == NULL) {
        goto done;
    }
    for (Py_ssize_t i = 1; i < nstages; i++) {
        PyObject *piece =
            stage_piece_of(timeline[i].name, INTERNAL_KIND, timeline[i].start, timeline[i].end);
        if (piece == NULL) {
            goto done;
        }
        PyTuple_SET_ITEM(stages, i - 1, piece);
    }
    consume = stage_piece_of(timeline[0].name, INTERNAL_KIND, timeline[0].start, timeline[0].end);
    topic_attribute = consume == NULL ? NULL : PyObject_CallOneArg(topic_of, records[0].topic);
    if (topic_attribute == NULL) {
        goto done;
    }
    if (!PyBytes_Check(topic_attribute)) {
        PyErr_SetString(PyExc_TypeError, "topic_of(topic) is not bytes");
        goto done;
    }
    /* room for the records' spans (about: a span is its base attributes and some 300 bytes
       more), so that the buffer seldom grows (each growth copies it) */
    if (buf_reserve(&spans, n * nstages * (PyBytes_GET_SIZE(base) + 300)) < 0) {
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (sink_record_spans(&records[i], stages, base, stage_base, process, end, NULL, shared,
                              where_of, where_new, &pool, &at, new_pool, &spans, &links,
                              &shared_buf, &shared_cap) < 0) {
            goto done;
        }
    }
    out = sink_batch_spans(batch_ids, batch_ids + 16, start, end, records[0].topic, size, n,
                           base, topic_attribute, process, consume, &links, &spans, &pool, &at,
                           new_pool);
    if (out != NULL) {
        result = Py_BuildValue("(NOOnn)", out, shared, pool, at, 2 + n * nstages);
    }
done:
    Py_DECREF(chosen);
    Py_XDECREF(shared);
    Py_XDECREF(stages);
    Py_XDECREF(consume);
    Py_XDECREF(topic_attribute);
    PyMem_Free(records);
    PyMem_Free(timeline);
    PyMem_Free(spans.data);
    PyMem_Free(links.data);
    PyMem_Free(shared_buf);
    Py_DECREF(pool);
    return result;
}

/* ---- which records of a batch to trace --------------------------------------------------- */

/* traceparents(raw) -> [(trace id, span id, traceparent), ...]: per 24 bytes of ``raw`` (random
   bytes) a new trace: the first 16 its id, the next 8 its first span's id (big-endian; an id of
   zeros, invalid, gets 1 in its last byte) and the W3C ``traceparent`` value naming them as
   sampled, ``b"00-<32 hex>-<16 hex>-01"``. The source tracer's loop (tracing._traceparents). */
static PyObject *
traceparents(PyObject *module, PyObject *raw)
{
    static const char digits[] = "0123456789abcdef";
    if (!PyBytes_Check(raw)) {
        PyErr_SetString(PyExc_TypeError, "traceparents: raw bytes");
        return NULL;
    }
    Py_ssize_t n = PyBytes_GET_SIZE(raw) / 24;
    PyObject *out = PyList_New(n);
    if (out == NULL) {
        return NULL;
    }
    const unsigned char *p = (const unsigned char *)PyBytes_AS_STRING(raw);
    for (Py_ssize_t j = 0; j < n; j++, p += 24) {
        unsigned char ids[24];
        memcpy(ids, p, 24);
        int trace_zero = 1, span_zero = 1;
        for (int k = 0; k < 16; k++) {
            trace_zero &= ids[k] == 0;
        }
        for (int k = 16; k < 24; k++) {
            span_zero &= ids[k] == 0;
        }
        if (trace_zero) {
            ids[15] = 1;
        }
        if (span_zero) {
            ids[23] = 1;
        }
        char text[55];
        memcpy(text, "00-", 3);
        for (int k = 0; k < 16; k++) {
            text[3 + 2 * k] = digits[ids[k] >> 4];
            text[4 + 2 * k] = digits[ids[k] & 15];
        }
        text[35] = '-';
        for (int k = 0; k < 8; k++) {
            text[36 + 2 * k] = digits[ids[16 + k] >> 4];
            text[37 + 2 * k] = digits[ids[16 + k] & 15];
        }
        memcpy(text + 52, "-01", 3);
        PyObject *trace_id = _PyLong_FromByteArray(ids, 16, 0, 0);
        PyObject *span_id = trace_id == NULL ? NULL : _PyLong_FromByteArray(ids + 16, 8, 0, 0);
        PyObject *value = span_id == NULL ? NULL : PyBytes_FromStringAndSize(text, 55);
        PyObject *item = value == NULL ? NULL : PyTuple_Pack(3, trace_id, span_id, value);
        Py_XDECREF(trace_id);
        Py_XDECREF(span_id);
        Py_XDECREF(value);
        if (item == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, j, item);
    }
    return out;
}

/* geometric_picks(n, skip, random, log) -> (positions, skip): tracer.Picker.pick's loop for a
   ratio between 0 and 1: from position ``skip``, each position before ``n`` is picked and the
   next is ``1 + int(math.log(1.0 - random()) / log)`` further (``log`` = log1p(-ratio), so the
   gap is geometric); returns the positions and the records still to pass over in the next
   batch. ``random``: the picker's Random.random, called as the Python loop calls it (the same
   draws in the same order). */
static PyObject *
geometric_picks(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "geometric_picks(n, skip, random, log)");
        return NULL;
    }
    Py_ssize_t n = PyLong_AsSsize_t(args[0]);
    Py_ssize_t i = n == -1 && PyErr_Occurred() ? -1 : PyLong_AsSsize_t(args[1]);
    double log_q = PyFloat_AsDouble(args[3]);
    if (PyErr_Occurred()) {
        return NULL;
    }
    if (n < 0 || i < 0 || !(log_q < 0.0)) {
        PyErr_SetString(PyExc_ValueError, "geometric_picks: n and skip >= 0, log < 0");
        return NULL;
    }
    PyObject *picked = PyList_New(0);
    if (picked == NULL) {
        return NULL;
    }
    while (i < n) {
        PyObject *at = PyLong_FromSsize_t(i);
        if (at == NULL || PyList_Append(picked, at) < 0) {
            Py_XDECREF(at);
            Py_DECREF(picked);
            return NULL;
        }
        Py_DECREF(at);
        PyObject *drawn = PyObject_CallNoArgs(args[2]);
        double u = drawn == NULL ? -1.0 : PyFloat_AsDouble(drawn);
        Py_XDECREF(drawn);
        if (PyErr_Occurred()) {
            Py_DECREF(picked);
            return NULL;
        }
        double gap = log(1.0 - u) / log_q; /* as the Python expression, in doubles */
        if (!(gap < 4.0e18)) {             /* inf (u == 1.0 cannot be: random() < 1) or huge */
            gap = 4.0e18;
        }
        Py_ssize_t step = (Py_ssize_t)gap;
        if (step > PY_SSIZE_T_MAX - 1 - i) {
            step = PY_SSIZE_T_MAX - 1 - i;
        }
        i += 1 + step;
    }
    return Py_BuildValue("(Nn)", picked, i - n);
}

/* otlp_source_batch(record, base, stage_base, send, where_of, where_new, pool, at, new_pool) ->
   (spans, shared, pool, at): RequestEncoder._source, a ``source`` trace record ``("source",
   base_attributes, timeline, records, ...)`` made into its spans: per traced record ``(trace
   id, span id, topic, partition or None)`` its ``send <topic>`` span (kind PRODUCER, the
   timeline's first start to its last end; attributes ``base``, the partition's from
   ``where_of`` by (topic, partition) or ``where_new(topic, partition)``, and ``send``), then one
   child span per stage of the timeline (attributes ``stage_base`` and the partition's; ids from
   the pool); ``shared``: the records' shared parts, in order, for their offset commit spans.
   The bytes of the Python loop. */
static PyObject *
otlp_source_batch(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 9) {
        PyErr_SetString(PyExc_TypeError, "otlp_source_batch(record, base, stage_base, send, "
                                         "where_of, where_new, pool, at, new_pool)");
        return NULL;
    }
    PyObject *record = args[0], *base = args[1], *stage_base = args[2], *send = args[3];
    PyObject *where_of = args[4], *where_new = args[5], *new_pool = args[8];
    if (!PyTuple_Check(record) || PyTuple_GET_SIZE(record) < 4 || !PyBytes_Check(base) ||
        !PyBytes_Check(stage_base) || !PyBytes_Check(send) || !PyDict_Check(where_of) ||
        !PyBytes_Check(args[6])) {
        PyErr_SetString(PyExc_TypeError, "otlp_source_batch: record a tuple of 4 items or more, "
                                         "base, stage_base, send and pool bytes, where_of a dict");
        return NULL;
    }
    Py_ssize_t at = PyLong_AsSsize_t(args[7]);
    if (at == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (at < 0) {
        PyErr_SetString(PyExc_ValueError, "otlp_source_batch: at < 0");
        return NULL;
    }
    PyObject *timeline = PyTuple_GET_ITEM(record, 2);
    if ((!PyList_Check(timeline) && !PyTuple_Check(timeline)) || Py_SIZE(timeline) < 1) {
        PyErr_SetString(PyExc_TypeError, "otlp_source_batch: a source record's timeline is not "
                                         "a list of stages");
        return NULL;
    }
    PyObject *stages_in = PySequence_Tuple(timeline);
    PyObject *seq = PySequence_Tuple(PyTuple_GET_ITEM(record, 3));
    PyObject *pool = Py_NewRef(args[6]);
    PyObject *shared = PyList_New(0), *stages = NULL, *result = NULL;
    OutBuf spans = {NULL, 0, 0};
    char *shared_buf = NULL;
    Py_ssize_t shared_cap = 0;
    if (stages_in == NULL || seq == NULL || shared == NULL) {
        goto done;
    }
    Py_ssize_t nstages = PyTuple_GET_SIZE(stages_in);
    unsigned long long start = 0, end = 0;
    stages = PyTuple_New(nstages);
    if (stages == NULL) {
        goto done;
    }
    for (Py_ssize_t i = 0; i < nstages; i++) {
        PyObject *t = PyTuple_GET_ITEM(stages_in, i);
        unsigned long long t0, t1;
        if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != 3) {
            PyErr_SetString(PyExc_TypeError, "a stage is not a (name, start, end) tuple");
            goto done;
        }
        if (as_u64(PyTuple_GET_ITEM(t, 1), &t0) < 0 || as_u64(PyTuple_GET_ITEM(t, 2), &t1) < 0) {
            goto done;
        }
        if (i == 0) {
            start = t0;
        }
        end = i == 0 || t1 > end ? t1 : end;
        PyObject *piece = stage_piece_of(PyTuple_GET_ITEM(t, 0), INTERNAL_KIND, t0, t1);
        if (piece == NULL) {
            goto done;
        }
        PyTuple_SET_ITEM(stages, i, piece);
    }
    Py_ssize_t base_size = PyBytes_GET_SIZE(base), stage_base_size = PyBytes_GET_SIZE(stage_base);
    Py_ssize_t send_size = PyBytes_GET_SIZE(send);
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(seq); i++) {
        PyObject *r = PyTuple_GET_ITEM(seq, i);
        if (!PyTuple_Check(r) || PyTuple_GET_SIZE(r) < 4) {
            PyErr_SetString(PyExc_TypeError, "a source trace record is not a tuple of 4 items");
            goto done;
        }
        PyObject *topic = PyTuple_GET_ITEM(r, 2), *partition = PyTuple_GET_ITEM(r, 3);
        unsigned char trace[18], span_id[8];
        unsigned long long id;
        trace[0] = 0x0a;
        trace[1] = 0x10;
        if (put_trace_id(trace + 2, PyTuple_GET_ITEM(r, 0)) < 0 ||
            as_u64(PyTuple_GET_ITEM(r, 1), &id) < 0) {
            goto done;
        }
        put_be64(span_id, id);
        Py_ssize_t topic_size;
        const char *topic_utf8 = utf8_of(topic, &topic_size, "a source record's topic");
        if (topic_utf8 == NULL) {
            goto done;
        }
        PyObject *key = PyTuple_Pack(2, topic, partition);
        if (key == NULL) {
            goto done;
        }
        PyObject *where = PyDict_GetItemWithError(where_of, key);
        Py_XINCREF(where);
        Py_DECREF(key);
        if (where == NULL) {
            if (PyErr_Occurred()) {
                goto done;
            }
            where = PyObject_CallFunctionObjArgs(where_new, topic, partition, NULL);
            if (where == NULL) {
                goto done;
            }
        }
        if (!PyBytes_Check(where)) {
            Py_DECREF(where);
            PyErr_SetString(PyExc_TypeError, "a partition's attributes are not bytes");
            goto done;
        }
        Py_ssize_t where_size = PyBytes_GET_SIZE(where);
        /* the send span: trace, span id, middle (name "send <topic>", kind, times), base,
           where, send, flags */
        Py_ssize_t name_size = 5 + topic_size;
        unsigned char name_len[10];
        Py_ssize_t name_len_size = put_varint(name_len, (unsigned long long)name_size);
        Py_ssize_t body_size = 28 + 1 + name_len_size + name_size + 20 + base_size + where_size +
                               send_size + 6;
        Py_ssize_t shared_size = 28 + stage_base_size + where_size + 6;
        if (buf_reserve(&spans, 11 + body_size) < 0) {
            Py_DECREF(where);
            goto done;
        }
        unsigned char head[11];
        head[0] = 0x12;
        buf_put(&spans, head, 1 + put_varint(head + 1, (unsigned long long)body_size));
        buf_put(&spans, trace, 18);
        buf_put(&spans, "\x12\x08", 2);
        buf_put(&spans, span_id, 8);
        buf_byte(&spans, 0x2a);
        buf_put(&spans, name_len, name_len_size);
        buf_put(&spans, "send ", 5);
        buf_put(&spans, topic_utf8, topic_size);
        unsigned char times[20];
        times[0] = 0x30;
        times[1] = PRODUCER_KIND;
        times[2] = 0x39;
        put_le64(times + 3, start);
        times[11] = 0x41;
        put_le64(times + 12, end);
        buf_put(&spans, times, 20);
        buf_put(&spans, PyBytes_AS_STRING(base), base_size);
        buf_put(&spans, PyBytes_AS_STRING(where), where_size);
        buf_put(&spans, PyBytes_AS_STRING(send), send_size);
        buf_put(&spans, FLAGS_LOCAL, 6);
        /* the shared part of its stage spans: trace, its span id as their parent, the stage
           attributes, where, flags */
        if (shared_cap < shared_size) {
            char *grown = PyMem_Realloc(shared_buf, (size_t)shared_size);
            if (grown == NULL) {
                Py_DECREF(where);
                PyErr_NoMemory();
                goto done;
            }
            shared_buf = grown;
            shared_cap = shared_size;
        }
        memcpy(shared_buf, trace, 18);
        memcpy(shared_buf + 18, "\x22\x08", 2);
        memcpy(shared_buf + 20, span_id, 8);
        memcpy(shared_buf + 28, PyBytes_AS_STRING(stage_base), (size_t)stage_base_size);
        memcpy(shared_buf + 28 + stage_base_size, PyBytes_AS_STRING(where), (size_t)where_size);
        memcpy(shared_buf + shared_size - 6, FLAGS_LOCAL, 6);
        Py_DECREF(where);
        PyObject *part = PyBytes_FromStringAndSize(shared_buf, shared_size);
        if (part == NULL) {
            goto done;
        }
        int appended = PyList_Append(shared, part);
        Py_DECREF(part);
        if (appended < 0) {
            goto done;
        }
        if (nstages) {
            const unsigned char *ids = take_ids(&pool, &at, nstages, new_pool);
            if (ids == NULL || put_children(&spans, shared_buf, shared_size,
                                            &PyTuple_GET_ITEM(stages, 0), nstages, ids) < 0) {
                goto done;
            }
        }
    }
    PyObject *out = buf_finish(&spans);
    if (out != NULL) {
        result = Py_BuildValue("(NOOn)", out, shared, pool, at);
    }
done:
    Py_XDECREF(stages_in);
    Py_XDECREF(seq);
    Py_XDECREF(stages);
    Py_XDECREF(shared);
    PyMem_Free(spans.data);
    PyMem_Free(shared_buf);
    Py_DECREF(pool);
    return result;
}

static PyMethodDef speedups_functions[] = {
    {"framed_slices", (PyCFunction)(void (*)(void))framed_slices, METH_FASTCALL,
     PyDoc_STR("framed_slices(items, prefix, suffix) -> the bytes between, or None")},
    {"method_any", (PyCFunction)(void (*)(void))method_any, METH_FASTCALL,
     PyDoc_STR("method_any(method, items) -> any(map(method, items)), faster for C methods")},
    {"chosen_fields", (PyCFunction)(void (*)(void))chosen_fields, METH_FASTCALL,
     PyDoc_STR("chosen_fields(msgs, chosen, accessors, name) -> the chosen messages' fields")},
    {"method_column", (PyCFunction)(void (*)(void))method_column, METH_FASTCALL,
     PyDoc_STR("method_column(method, items) -> tuple(map(method, items)), faster for C methods")},
    {"produce_values", (PyCFunction)(void (*)(void))produce_values, METH_FASTCALL,
     PyDoc_STR("produce_values(produce, args, values, start[, stop[, added]]) -> (stop, "
               "error): produce(*args) per value, args[1] the value, added: headers by index")},
    {"timestamp_columns", (PyCFunction)(void (*)(void))timestamp_columns, METH_FASTCALL,
     PyDoc_STR("timestamp_columns(msgs, timestamp, types) -> (timestamps, types)")},
    {"otlp_sink_batch", (PyCFunction)(void (*)(void))otlp_sink_batch, METH_FASTCALL,
     PyDoc_STR("otlp_sink_batch(record, base, stage_base, topic_attribute, process, shared_of, "
               "where_of, where_new, pool, at, new_pool) -> (spans, pool, at)")},
    {"trace_records", (PyCFunction)(void (*)(void))trace_records, METH_FASTCALL,
     PyDoc_STR("trace_records(chosen, parent_based, arrived, new_id, parse) -> list of sink "
               "trace records")},
    {"traceparents", (PyCFunction)traceparents, METH_O,
     PyDoc_STR("traceparents(raw) -> [(trace id, span id, traceparent value), ...]")},
    {"geometric_picks", (PyCFunction)(void (*)(void))geometric_picks, METH_FASTCALL,
     PyDoc_STR("geometric_picks(n, skip, random, log) -> (positions, skip)")},
    {"otlp_consumed", (PyCFunction)(void (*)(void))otlp_consumed, METH_FASTCALL,
     PyDoc_STR("otlp_consumed(record, base, stage_base, topic_of, process, where_of, "
               "where_new, pool, at, new_pool, parse) -> (spans, shared, pool, at, count)")},
    {"otlp_source_batch", (PyCFunction)(void (*)(void))otlp_source_batch, METH_FASTCALL,
     PyDoc_STR("otlp_source_batch(record, base, stage_base, send, where_of, where_new, pool, at, "
               "new_pool) -> (spans, shared, pool, at)")},
    {"otlp_commit_spans", (PyCFunction)(void (*)(void))otlp_commit_spans, METH_FASTCALL,
     PyDoc_STR("otlp_commit_spans(records, middle, shared_of, shared_new, pool, at, new_pool) "
               "-> (spans, pool, at)")},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef speedups_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "connectrt._speedups",
    .m_doc = PyDoc_STR("A sink batch's records built in one C call, a source list's "
                       "values taken in one C pass (optional)."),
    .m_size = -1,
    .m_methods = speedups_functions,
};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    fill_hex_values();
    if (PyType_Ready(&SlotFiller_Type) < 0 || PyType_Ready(&LazyColumns_Type) < 0 ||
        PyType_Ready(&LazySlot_Type) < 0) {
        return NULL;
    }
    PyObject *module = PyModule_Create(&speedups_module);
    if (module == NULL) {
        return NULL;
    }
    if (PyModule_AddObjectRef(module, "SlotFiller", (PyObject *)&SlotFiller_Type) < 0 ||
        PyModule_AddObjectRef(module, "LazySlot", (PyObject *)&LazySlot_Type) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
