/* connectrt._speedups: a sink batch's records built (and freed) in C, its columns read from the
 * consumed messages in C.
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
 * ``own_dealloc(slots)`` makes this module free the class's instances (record_dealloc: slots
 * cleared by offset, not CPython's walk over the class hierarchy) and keep up to FREE_RECORDS
 * of them for fill() to make the next batch's records of. ``method_column(method, items)`` is
 * ``tuple(map(method, items))`` calling a C method's function directly (librdkafka's Message
 * accessors, read once per message of every batch).
 *
 * Optional: connectrt uses the pure-Python loops when this module is not built.
 * Threads: no state changes outside the GIL (the module's statics included: the class it frees
 * and its kept records); a SlotFiller is immutable after construction but for its cache of row
 * numbers.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#define MAX_SLOTS 32

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

/* The one class whose tp_dealloc is record_dealloc (SlotFiller.own_dealloc), and the end of its
   slots: every pointer-sized word from the object header to tp_basicsize is one of its slots. */
static PyTypeObject *dealloc_cls;
static Py_ssize_t dealloc_end;

static void
clear_record_slots(PyObject *self)
{
    for (Py_ssize_t offset = dealloc_end - (Py_ssize_t)sizeof(PyObject *);
         offset >= (Py_ssize_t)sizeof(PyObject); offset -= (Py_ssize_t)sizeof(PyObject *)) {
        Py_CLEAR(SLOT(self, offset));
    }
}

/* How many records' deallocations are nested on the stack (under the GIL), since the last
   trashcan entered. */
static int dealloc_depth;
#define DEALLOC_DEPTH 32

/* Freed instances of dealloc_cls (every slot cleared, untracked, their type reference kept),
   which fill() makes its records of before asking the allocator, as CPython keeps freed tuples
   and lists: a sink task frees a batch's records just before the next batch's are made. At
   most two batches' worth (176 KB). */
#define FREE_RECORDS 1024
static PyObject *free_records[FREE_RECORDS];
static int nfree_records;

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

/* An instance of dealloc_cls itself, untracked: finalized (in case the class was given a
   __del__ later), slots cleared, freed. */
static void
record_free(PyObject *self, PyTypeObject *type)
{
    if (type->tp_finalize != NULL) {
        PyObject_GC_Track(self);
        if (PyObject_CallFinalizerFromDealloc(self) < 0) {
            return; /* resurrected */
        }
        PyObject_GC_UnTrack(self);
    }
    dealloc_depth++;
    clear_record_slots(self);
    dealloc_depth--;
    if (nfree_records < FREE_RECORDS) {
        free_records[nfree_records++] = self; /* with its reference to the type, for fill() */
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
    if (type != dealloc_cls) {
        clear_record_slots(self);
        type->tp_free(self);
        Py_DECREF(type);
        return;
    }
    if (dealloc_depth < DEALLOC_DEPTH) {
        record_free(self, type);
        return;
    }
    Py_TRASHCAN_BEGIN(self, record_dealloc)
    int depth = dealloc_depth;
    dealloc_depth = 0;
    record_free(self, type);
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
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *record;
        int reused = cls == dealloc_cls && nfree_records > 0;
        if (reused) {
            record = free_records[--nfree_records];
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
    if (dealloc_cls != NULL) {
        if (dealloc_cls == cls) {
            Py_RETURN_NONE;
        }
        PyErr_Format(PyExc_TypeError, "own_dealloc: already installed on %s",
                     dealloc_cls->tp_name);
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
    dealloc_cls = (PyTypeObject *)Py_NewRef(cls); /* kept: its tp_dealloc is ours for good */
    dealloc_end = cls->tp_basicsize;
    cls->tp_dealloc = record_dealloc;
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
    {"make", (PyCFunction)(void (*)(void))SlotFiller_make, METH_FASTCALL,
     PyDoc_STR("make(*values) -> one new instance, the values stored in the slots in order")},
    {"fill_lazy", (PyCFunction)(void (*)(void))SlotFiller_fill_lazy, METH_FASTCALL,
     PyDoc_STR("fill_lazy(n, columns, loader) -> list: None columns load on first read")},
    {"descriptors", (PyCFunction)SlotFiller_descriptors, METH_O,
     PyDoc_STR("descriptors(names) -> tuple of LazySlot, one per name, to install on the class")},
    {"copy", (PyCFunction)(void (*)(void))SlotFiller_copy, METH_FASTCALL,
     PyDoc_STR("copy(obj, list_slot) -> a new instance with obj's slots")},
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

static PyMethodDef speedups_functions[] = {
    {"method_any", (PyCFunction)(void (*)(void))method_any, METH_FASTCALL,
     PyDoc_STR("method_any(method, items) -> any(map(method, items)), faster for C methods")},
    {"method_column", (PyCFunction)(void (*)(void))method_column, METH_FASTCALL,
     PyDoc_STR("method_column(method, items) -> tuple(map(method, items)), faster for C methods")},
    {"timestamp_columns", (PyCFunction)(void (*)(void))timestamp_columns, METH_FASTCALL,
     PyDoc_STR("timestamp_columns(msgs, timestamp, types) -> (timestamps, types)")},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef speedups_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "connectrt._speedups",
    .m_doc = PyDoc_STR("A sink batch's records built in one C call (optional)."),
    .m_size = -1,
    .m_methods = speedups_functions,
};

PyMODINIT_FUNC
PyInit__speedups(void)
{
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
