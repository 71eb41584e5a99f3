/* The tracer's per-line hot path in C (optional; tracer.py works without it).
 *
 * `FrameCore` (base of tracer.Frame) and `TracerCore` (base of tracer.Tracer) hold the fields
 * the hot paths touch. settrace(hook) installs a C trace function that handles, exactly as the
 * pure-Python `Tracer._global` and `Frame.local` do, `call` events (a new frame's state),
 * `line` events whose offset has a cached record (a frame's first line included) and `return`
 * events; anything else (opcode and exception events, a stopped tracer, an offset seen for the
 * first time, class bodies) is handed to `local`. Rare sub-steps call the same Python methods
 * the Python path calls (store, bind, entry, count_loops, resolve_rev, start_inline,
 * Tracer.check_caps), so the two paths share their logic wherever it is not the common case. Only the public C API of CPython
 * 3.11+ is used. Bump CORE_ABI when the fields or the Python-side contract change: tracer.py
 * refuses a build whose ABI differs from the one it expects.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <marshal.h>
#include <stddef.h>
#include <structmember.h>

#define CORE_ABI 3

/* Flags of a line's "point" (tracer.py: STORE, MUTATE, INPLACE, FULL). */
#define F_MUTATE 2
#define F_FULL 8
#define F_HARD (F_MUTATE | F_FULL)
/* Entry kinds (tracer.py: _ID, _FOREIGN, _FP). */
#define K_ID 0
#define K_FOREIGN 1
#define SMALL_INT 1000000000000000LL /* tracer.py: SMALL */

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *tr, *recs, *step, *raised, *point, *snap, *watch, *rev_loop, *rev_index, *rev_step,
        *rev_more, *cond_test, *cond_step, *inline_step, *inline_seen, *template_, *enc, *counts,
        *loops, *off, *fn, *max_chars, *depth, *fid, *info, *inline_offs, *qual;
} Core;

#define CORE_FIELDS_BUT_FN(X)                                                                  \
    X(tr) X(recs) X(step) X(raised) X(point) X(snap) X(watch) X(rev_loop) X(rev_index)         \
    X(rev_step) X(rev_more) X(cond_test) X(cond_step) X(inline_step) X(inline_seen)            \
    X(template_) X(enc) X(counts) X(loops) X(off) X(max_chars) X(depth) X(fid) X(info)         \
    X(inline_offs) X(qual)
#define CORE_FIELDS(X) CORE_FIELDS_BUT_FN(X) X(fn)

/* The fields of tracer.Tracer the hot path reads or updates on every event. */
typedef struct {
    PyObject_HEAD
    PyObject *steps, *size, *limit, *stopped, *render, *_infos, *depth, *events, *next_fid,
        *frame_type, *full_point, *no_point, *missing, *loop_type, *no_offsets;
} TracerCore;

/* The last six are constants of tracer.py the C paths need (set by Tracer.__init__). */
#define TRACER_FIELDS(X)                                                                       \
    X(steps) X(size) X(limit) X(stopped) X(render) X(_infos) X(depth) X(events) X(next_fid)    \
    X(frame_type) X(full_point) X(no_point) X(missing) X(loop_type) X(no_offsets)

static PyTypeObject TracerCoreType;

static PyObject *s_line, *s_local, *s_stopped, *s_store, *s_rebind_all, *s_count_loops,
    *s_resolve_rev, *s_start_inline, *s_abandon, *s_check_caps, *s_steps, *s_limit, *s_size,
    *s_render, *s_text, *s_bound, *s_with_fingerprint, *s_changes, *s_cond, *s_loops,
    *s_f_trace_opcodes, *s_body_lo, *s_body_hi, *s_lo, *s_hi, *s_inline, *s_recheck_foreign,
    *s_f_trace, *s_bind, *s_drop_missing, *s_first_step, *s_entry, *s_frame, *s_fid, *s_depth,
    *s_args, *s_qualname, *s_recs, *s_max_chars, *s_analyse, *s_call_error, *s_yields,
    *s_returns, *s_class_body, *s_ret, *s_yield, *s_missing, *s_loop_type;

/* A Tracer field: read directly when the tracer is a TracerCore, else as an attribute. */
static PyObject *
tracer_field(Core *self, PyObject *name, size_t offset)
{
    PyObject *tr = self->tr;
    if (PyObject_TypeCheck(tr, &TracerCoreType)) {
        PyObject *value = *(PyObject **)((char *)tr + offset);
        if (value != NULL)
            return Py_NewRef(value);
    }
    return PyObject_GetAttr(tr, name);
}

#define TRACER_FIELD(self, field) tracer_field(self, s_##field, offsetof(TracerCore, field))

/* Item i of a tracking entry [value, text, kind, extra, (snapshot)], borrowed; NULL with
 * TypeError if the entry is malformed. The program can reach the tracer's objects (through
 * sys.gettrace() or a frame's f_trace) and change them; that must end in tracer_error, never in
 * an unchecked access. */
static PyObject *
entry_item(PyObject *entry, Py_ssize_t i)
{
    if (!PyList_CheckExact(entry) || PyList_GET_SIZE(entry) < 4 || i >= PyList_GET_SIZE(entry)) {
        PyErr_SetString(PyExc_TypeError, "malformed tracking entry");
        return NULL;
    }
    return PyList_GET_ITEM(entry, i);
}

static long
entry_kind(PyObject *entry)
{
    PyObject *kind = entry_item(entry, 2);
    return kind == NULL ? -1 : PyLong_AsLong(kind);
}

/* Replace a field (steals a reference to `value`). */
#define SET_FIELD(field, value)            \
    do {                                   \
        PyObject *_old = (field);          \
        (field) = (value);                 \
        Py_XDECREF(_old);                  \
    } while (0)

static PyObject *
call_method(Core *self, PyObject *name, PyObject *a, PyObject *b, PyObject *c, PyObject *d)
{
    PyObject *args[5] = {(PyObject *)self, a, b, c, d};
    size_t n = 1 + (a != NULL) + (b != NULL) + (c != NULL) + (d != NULL);
    return PyObject_VectorcallMethod(name, args, n | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
}

static int
call_method_void(Core *self, PyObject *name, PyObject *a, PyObject *b, PyObject *c, PyObject *d)
{
    PyObject *result = call_method(self, name, a, b, c, d);
    if (result == NULL)
        return -1;
    Py_DECREF(result);
    return 0;
}

/* An int attribute of a tracer object (Loop, Test). */
static int
int_attr(PyObject *obj, PyObject *name, long *out)
{
    PyObject *value = PyObject_GetAttr(obj, name);
    if (value == NULL)
        return -1;
    *out = PyLong_AsLong(value);
    Py_DECREF(value);
    return (*out == -1 && PyErr_Occurred()) ? -1 : 0;
}

/* line in [obj.<lo>, obj.<hi>]: 1, 0, or -1 on error. */
static int
line_within(PyObject *obj, PyObject *lo_name, PyObject *hi_name, long line)
{
    long lo, hi;
    if (int_attr(obj, lo_name, &lo) < 0 || int_attr(obj, hi_name, &hi) < 0)
        return -1;
    return lo <= line && line <= hi;
}

/* tracer.size += len(name) + len(text) + 6, and changes[name] = text in `step`. */
static int
note_change(Core *self, PyObject *step, PyObject *name, PyObject *text)
{
    if (!PyUnicode_Check(name) || !PyUnicode_Check(text)) {
        PyErr_SetString(PyExc_TypeError, "local names and value texts must be str");
        return -1;
    }
    PyObject *changes = PyDict_GetItemWithError(step, s_changes);
    if (changes == NULL) {
        if (PyErr_Occurred())
            return -1;
        changes = PyDict_New();
        if (changes == NULL)
            return -1;
        int failed = PyDict_SetItem(changes, name, text) < 0 ||
                     PyDict_SetItem(step, s_changes, changes) < 0;
        Py_DECREF(changes);
        if (failed)
            return -1;
    }
    else if (PyObject_SetItem(changes, name, text) < 0) {
        return -1;
    }
    PyObject *size = TRACER_FIELD(self, size);
    if (size == NULL)
        return -1;
    PyObject *added = PyLong_FromSsize_t(PyUnicode_GET_LENGTH(name) + PyUnicode_GET_LENGTH(text) + 6);
    PyObject *total = added == NULL ? NULL : PyNumber_Add(size, added);
    Py_DECREF(size);
    Py_XDECREF(added);
    if (total == NULL)
        return -1;
    if (PyObject_TypeCheck(self->tr, &TracerCoreType)) {
        SET_FIELD(((TracerCore *)self->tr)->size, total);
        return 0;
    }
    int rc = PyObject_SetAttr(self->tr, s_size, total);
    Py_DECREF(total);
    return rc;
}

/* Names starting with "." (comprehension arguments) and the implicit __class__ cell are kept
 * out of the trace. */
static int
reported(PyObject *name)
{
    if (PyUnicode_GET_LENGTH(name) > 0 && PyUnicode_READ_CHAR(name, 0) == '.')
        return 0;
    return PyUnicode_CompareWithASCIIString(name, "__class__") != 0;
}

static int is_atom(PyObject *value);

/* Shallow snapshots: a list or dict whose items are all atoms (immutable) is unchanged
 * exactly when it holds the same item objects in the same order; its marshal fingerprint is then
 * unchanged too, so re-checking it needs pointer comparisons instead of a fingerprint. The
 * snapshot is a tuple (container, items...) (dicts: keys and values alternating), holding
 * references so that no address can be reused; it rides as a 5th element of the watch entry
 * (the Python code uses only the first four, and a new binding makes a new entry). */
static int
snapshot_walk(PyObject *container, PyObject *snapshot, PyObject **items_out)
{
    /* Compare (snapshot != NULL) or collect (items_out: a new list) the items of container.
     * Returns 1 if equal / collected with atoms only, 0 otherwise, -1 on error. */
    PyObject *items = NULL;
    Py_ssize_t at = 1;
    if (!PyList_CheckExact(container) && !PyDict_CheckExact(container))
        return 0;
    if (items_out != NULL) {
        items = PyList_New(0);
        if (items == NULL || PyList_Append(items, container) < 0) {
            Py_XDECREF(items);
            return -1;
        }
    }
#define OFFER(item)                                                                   \
    do {                                                                              \
        if (snapshot != NULL) {                                                       \
            if (at >= PyTuple_GET_SIZE(snapshot) || PyTuple_GET_ITEM(snapshot, at) != (item)) \
                return 0;                                                             \
            at++;                                                                     \
        }                                                                             \
        else if (!is_atom(item)) {                                                    \
            Py_DECREF(items);                                                         \
            return 0;                                                                 \
        }                                                                             \
        else if (PyList_Append(items, (item)) < 0) {                                  \
            Py_DECREF(items);                                                         \
            return -1;                                                                \
        }                                                                             \
    } while (0)
    if (PyList_CheckExact(container)) {
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(container); i++)
            OFFER(PyList_GET_ITEM(container, i));
    }
    else {
        Py_ssize_t pos = 0;
        PyObject *key, *value;
        while (PyDict_Next(container, &pos, &key, &value)) {
            OFFER(key);
            OFFER(value);
        }
    }
#undef OFFER
    if (snapshot != NULL)
        return at == PyTuple_GET_SIZE(snapshot);
    *items_out = items;
    return 1;
}

/* Unchanged since the snapshot in entry[4]: 1, else 0. */
static int
snapshot_holds(PyObject *entry, PyObject *value)
{
    if (PyList_GET_SIZE(entry) != 5)
        return 0;
    PyObject *snapshot = PyList_GET_ITEM(entry, 4);
    if (!PyTuple_CheckExact(snapshot) || PyTuple_GET_SIZE(snapshot) == 0 ||
        PyTuple_GET_ITEM(snapshot, 0) != value)
        return 0;
    return snapshot_walk(value, snapshot, NULL);
}

/* Store a snapshot of value in entry[4], or drop a stale one. */
static int
snapshot_take(PyObject *entry, PyObject *value)
{
    PyObject *items = NULL;
    int atoms = snapshot_walk(value, NULL, &items);
    if (atoms < 0)
        return -1;
    if (!atoms)
        return PyList_GET_SIZE(entry) > 4 ? PyList_SetSlice(entry, 4, PyList_GET_SIZE(entry), NULL)
                                           : 0;
    PyObject *snapshot = PyList_AsTuple(items);
    Py_DECREF(items);
    if (snapshot == NULL)
        return -1;
    int rc;
    if (PyList_GET_SIZE(entry) == 4) {
        rc = PyList_Append(entry, snapshot);
        Py_DECREF(snapshot);
    }
    else {
        rc = PyList_SetItem(entry, 4, snapshot);
    }
    return rc;
}

/* A tracked local's text is now `text`: if it differs from entry[1], store it and, when
 * `report`, record the change in `step`. */
static int
set_text(Core *self, PyObject *entry, PyObject *name, PyObject *text, PyObject *step, int report)
{
    PyObject *old_text = entry_item(entry, 1);
    int differs = old_text == NULL ? -1 : PyObject_RichCompareBool(text, old_text, Py_NE);
    if (differs <= 0)
        return differs;
    Py_INCREF(text);
    if (PyList_SetItem(entry, 1, text) < 0)
        return -1;
    return report ? note_change(self, step, name, text) : 0;
}

/* Frame.recheck: look for in-place changes of the watched containers and objects. */
static int
recheck(Core *self, PyObject *step)
{
    PyObject *render = TRACER_FIELD(self, render);
    if (render == NULL)
        return -1;
    PyObject *bound_obj = PyObject_GetAttr(render, s_bound);
    Py_ssize_t bound = bound_obj == NULL ? -1 : PyLong_AsSsize_t(bound_obj);
    Py_XDECREF(bound_obj);
    if (bound == -1 && PyErr_Occurred()) {
        Py_DECREF(render);
        return -1;
    }
    /* A snapshot of the items: Python code (the renderer) runs inside the loop. */
    PyObject *items = PyDict_Items(self->watch);
    if (items == NULL) {
        Py_DECREF(render);
        return -1;
    }
    int rc = 0;
    Py_ssize_t count = PyList_GET_SIZE(items);
    for (Py_ssize_t i = 0; i < count && rc == 0; i++) {
        PyObject *pair = PyList_GET_ITEM(items, i);
        PyObject *name = PyTuple_GET_ITEM(pair, 0);
        PyObject *entry = PyTuple_GET_ITEM(pair, 1);
        if (!PyList_CheckExact(entry) || PyList_GET_SIZE(entry) < 4 || !PyUnicode_Check(name)) {
            PyErr_SetString(PyExc_TypeError, "malformed watch entry");
            rc = -1;
            break;
        }
        PyObject *value = PyList_GET_ITEM(entry, 0);
        long kind = entry_kind(entry);
        if (kind == -1 && PyErr_Occurred()) {
            rc = -1;
            break;
        }
        PyObject *text = NULL;
        if (kind == K_FOREIGN) {
            PyObject *seen = entry_item(entry, 3);
            if (seen == NULL) {
                rc = -1;
                break;
            }
            if ((PyObject *)Py_TYPE(value) == seen)
                continue;
            text = call_method(self, s_recheck_foreign, entry, NULL, NULL, NULL);
        }
        else {
            Py_INCREF(value);
            Py_ssize_t size = PyObject_Size(value);
            if (size < 0) {
                Py_DECREF(value);
                rc = -1;
                break;
            }
            if (size > bound) {
                PyObject *old = entry_item(entry, 3);
                if (old == NULL) {
                    Py_DECREF(value);
                    rc = -1;
                    break;
                }
                if (PyLong_CheckExact(old) && PyLong_AsSsize_t(old) == size) {
                    Py_DECREF(value);
                    continue;
                }
                PyObject *size_obj = PyLong_FromSsize_t(size);
                if (size_obj == NULL || PyList_SetItem(entry, 3, size_obj) < 0 ||
                    PyList_SetSlice(entry, 4, PyList_GET_SIZE(entry), NULL) < 0) {
                    Py_DECREF(value);
                    rc = -1;
                    break;
                }
                text = PyUnicode_FromFormat("<%s of %zd items, too large>",
                                            Py_TYPE(value)->tp_name, size);
            }
            else {
                int holds = snapshot_holds(entry, value);
                if (holds != 0) {
                    Py_DECREF(value);
                    if (holds < 0) {
                        rc = -1;
                        break;
                    }
                    continue;
                }
                PyObject *fp = PyMarshal_WriteObjectToString(value, 2);
                if (fp == NULL) {
                    if (!PyErr_ExceptionMatches(PyExc_ValueError) &&
                        !PyErr_ExceptionMatches(PyExc_RecursionError) &&
                        !PyErr_ExceptionMatches(PyExc_MemoryError)) {
                        Py_DECREF(value);
                        rc = -1;
                        break;
                    }
                    PyErr_Clear();
                    fp = Py_NewRef(Py_None);
                }
                else {
                    PyObject *old = entry_item(entry, 3);
                    int same = old == NULL ? -1 : PyObject_RichCompareBool(fp, old, Py_EQ);
                    if (same > 0 && snapshot_take(entry, value) < 0)
                        same = -1;
                    if (same != 0) {
                        Py_DECREF(fp);
                        Py_DECREF(value);
                        if (same < 0) {
                            rc = -1;
                            break;
                        }
                        continue;
                    }
                }
                Py_INCREF(fp);
                if (PyList_SetItem(entry, 3, fp) < 0 || snapshot_take(entry, value) < 0) {
                    Py_DECREF(fp);
                    Py_DECREF(value);
                    rc = -1;
                    break;
                }
                PyObject *args[3] = {render, value, fp};
                text = PyObject_VectorcallMethod(s_with_fingerprint, args, 3, NULL);
                Py_DECREF(fp);
            }
            Py_DECREF(value);
        }
        if (text == NULL) {
            rc = -1;
            break;
        }
        if (set_text(self, entry, name, text, step, reported(name)) < 0)
            rc = -1;
        Py_DECREF(text);
    }
    Py_DECREF(items);
    Py_DECREF(render);
    return rc;
}

/* The text of an atom that replaced an atom, when the shortcut applies: an int of at most 16
 * digits or a short str renders as its repr. Returns a new reference, or NULL with no error
 * set when store() must decide. */
static PyObject *
atom_text(Core *self, PyObject *value, long max_chars)
{
    if (PyLong_CheckExact(value)) {
        int overflow;
        long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
        if (overflow || v <= -SMALL_INT || v >= SMALL_INT)
            return NULL;
        return PyObject_Repr(value);
    }
    if (PyUnicode_CheckExact(value) && PyUnicode_GET_LENGTH(value) <= max_chars) {
        PyObject *text = PyObject_Repr(value);
        if (text == NULL || PyUnicode_GET_LENGTH(text) <= max_chars)
            return text;
        Py_DECREF(text); /* many escapes: the renderer decides */
        PyObject *render = TRACER_FIELD(self, render);
        if (render == NULL)
            return NULL;
        PyObject *args[2] = {render, value};
        text = PyObject_VectorcallMethod(s_text, args, 2, NULL);
        Py_DECREF(render);
        return text;
    }
    return NULL;
}

/* tracer.render.text(value), with atom_text's shortcut first. */
static PyObject *
render_text(Core *self, PyObject *value, long max_chars)
{
    PyObject *text = atom_text(self, value, max_chars);
    if (text != NULL || PyErr_Occurred())
        return text;
    PyObject *render = TRACER_FIELD(self, render);
    if (render == NULL)
        return NULL;
    PyObject *args[2] = {render, value};
    text = PyObject_VectorcallMethod(s_text, args, 2, NULL);
    Py_DECREF(render);
    return text;
}

static int
is_atom(PyObject *value)
{
    PyTypeObject *type = Py_TYPE(value);
    return type == &PyLong_Type || type == &PyUnicode_Type || type == &PyFloat_Type ||
           type == &PyBool_Type || type == Py_TYPE(Py_None) || type == &PyBytes_Type ||
           type == &PyComplex_Type;
}

/* _Frame.rebind_all: every local may have been rebound (after a call, an exception, ...). */
static int
rebind_all(Core *self, PyObject *loc, PyObject *step)
{
    if (!PyDict_CheckExact(loc) || !PyDict_CheckExact(self->snap))
        return call_method_void(self, s_rebind_all, loc, step, NULL, NULL);
    long max_chars = PyLong_AsLong(self->max_chars);
    if (max_chars == -1 && PyErr_Occurred())
        return -1;
    Py_ssize_t pos = 0;
    PyObject *name, *value;
    int rc = 0;
    while (rc == 0 && PyDict_Next(loc, &pos, &name, &value)) {
        if (!PyUnicode_Check(name)) {
            PyErr_SetString(PyExc_TypeError, "local names must be str");
            return -1;
        }
        PyObject *entry = PyDict_GetItemWithError(self->snap, name);
        if (entry == NULL && PyErr_Occurred())
            return -1;
        if (entry != NULL && entry_item(entry, 0) == value)
            continue;
        if (PyErr_Occurred())
            return -1;
        Py_INCREF(name);
        Py_INCREF(value);
        Py_XINCREF(entry);
        long kind = entry == NULL ? -1 : entry_kind(entry);
        if (kind == -1 && PyErr_Occurred()) {
            rc = -1;
        }
        else if (kind == K_ID && is_atom(value)) {
            /* an atom replaced by an atom: reuse the entry */
            PyObject *text = render_text(self, value, max_chars);
            if (text == NULL) {
                rc = -1;
            }
            else {
                Py_INCREF(value);
                PyList_SetItem(entry, 0, value);
                rc = set_text(self, entry, name, text, step, reported(name)) < 0 ? -1 : 0;
                Py_DECREF(text);
            }
        }
        else {
            rc = call_method_void(self, s_bind, name, value, entry ? entry : Py_None, step);
        }
        Py_XDECREF(entry);
        Py_DECREF(value);
        Py_DECREF(name);
    }
    if (rc == 0) {
        Py_ssize_t tracked = PyDict_Size(self->snap);
        if (tracked < 0)
            rc = -1;
        else if (tracked > PyDict_Size(loc))
            rc = call_method_void(self, s_drop_missing, loc, step, NULL, NULL);
    }
    return rc;
}

/* The stored-to names of the line that just ran: record those rebound. */
static int
update_stores(Core *self, PyObject *loc, PyObject *stores, PyObject *step)
{
    long max_chars = PyLong_AsLong(self->max_chars);
    if (max_chars == -1 && PyErr_Occurred())
        return -1;
    Py_ssize_t n = PyTuple_GET_SIZE(stores);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *name = PyTuple_GET_ITEM(stores, i);
        if (!PyUnicode_Check(name)) {
            PyErr_SetString(PyExc_TypeError, "local names must be str");
            return -1;
        }
        PyObject *value;
        if (PyDict_CheckExact(loc)) {
            value = PyDict_GetItemWithError(loc, name);
            if (value == NULL && PyErr_Occurred())
                return -1;
            value = value == NULL ? TRACER_FIELD(self, missing) : Py_NewRef(value);
            if (value == NULL)
                return -1;
        }
        else {
            value = PyObject_GetItem(loc, name);
            if (value == NULL) {
                if (!PyErr_ExceptionMatches(PyExc_KeyError))
                    return -1;
                PyErr_Clear();
                value = TRACER_FIELD(self, missing);
                if (value == NULL)
                    return -1;
            }
        }
        PyObject *entry = PyDict_GetItemWithError(self->snap, name);
        if (entry == NULL && PyErr_Occurred()) {
            Py_DECREF(value);
            return -1;
        }
        if (entry != NULL && entry_item(entry, 0) == value) {
            Py_DECREF(value);
            continue;
        }
        if (PyErr_Occurred()) {
            Py_DECREF(value);
            return -1;
        }
        Py_XINCREF(entry);
        int rc = 0;
        PyObject *text = NULL;
        long kind = entry == NULL ? -1 : entry_kind(entry);
        if (kind == -1 && PyErr_Occurred())
            rc = -1;
        else if (kind == K_ID)
            text = atom_text(self, value, max_chars);
        if (rc == 0 && text == NULL) {
            if (PyErr_Occurred())
                rc = -1;
            else
                rc = call_method_void(self, s_store, name, value, entry ? entry : Py_None, step);
        }
        else if (rc == 0) {
            /* As store() does: the change is recorded whatever the name. */
            Py_INCREF(value);
            PyList_SetItem(entry, 0, value);
            rc = set_text(self, entry, name, text, step, 1) < 0 ? -1 : 0;
        }
        Py_XDECREF(text);
        Py_XDECREF(entry);
        Py_DECREF(value);
        if (rc < 0)
            return -1;
    }
    return 0;
}

/* Finish the frame's previous step: the line that just ran. */
static int
finish_step(Core *self, PyObject *frame, PyObject *step)
{
    PyObject *point = self->point;
    if (!PyTuple_CheckExact(point) || PyTuple_GET_SIZE(point) != 3 ||
        !PyTuple_CheckExact(PyTuple_GET_ITEM(point, 1)) ||
        !PyTuple_CheckExact(PyTuple_GET_ITEM(point, 2))) {
        PyErr_SetString(PyExc_TypeError, "malformed line point");
        return -1;
    }
    long flags = PyLong_AsLong(PyTuple_GET_ITEM(point, 0));
    if (flags == -1 && PyErr_Occurred())
        return -1;
    if (!flags)
        return 0;
    Py_INCREF(point);
    int rc = 0;
    PyObject *loc = PyFrame_GetLocals((PyFrameObject *)frame);
    if (loc == NULL) {
        Py_DECREF(point);
        return -1;
    }
    int full = (flags & F_FULL) != 0;
    if (!full && (flags & F_MUTATE)) {
        Py_ssize_t size = PyObject_Size(loc);
        if (size < 0)
            rc = -1;
        else {
            Py_ssize_t tracked = PyDict_Size(self->snap);
            if (tracked < 0)
                rc = -1;
            else
                full = size != tracked;
        }
    }
    if (rc == 0) {
        if (full)
            rc = rebind_all(self, loc, step);
        else
            rc = update_stores(self, loc, PyTuple_GET_ITEM(point, 1), step);
    }
    Py_DECREF(loc);
    Py_ssize_t watched = rc == 0 ? PyDict_Size(self->watch) : 0;
    if (watched < 0)
        rc = -1;
    if (rc == 0 && watched > 0) {
        if (flags & F_HARD) {
            rc = recheck(self, step);
        }
        else {
            PyObject *inplace = PyTuple_GET_ITEM(point, 2);
            for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(inplace); i++) {
                PyObject *entry = PyDict_GetItemWithError(self->snap, PyTuple_GET_ITEM(inplace, i));
                if (entry == NULL) {
                    if (PyErr_Occurred()) {
                        rc = -1;
                        break;
                    }
                    continue;
                }
                long kind = entry_kind(entry);
                if (kind != K_ID) {
                    /* `x += ...` mutated a container in place (maybe aliased) */
                    rc = (kind == -1 && PyErr_Occurred()) ? -1 : recheck(self, step);
                    break;
                }
            }
        }
    }
    Py_DECREF(point);
    return rc;
}

/* The pending decisions of the previous step: loop exit, if/while outcome, one-line if. */
static int
settle(Core *self, PyObject *frame, long line, PyObject *line_obj, PyObject *off)
{
    PyObject *rev = self->rev_loop;
    if (rev != Py_None) {
        int inside = 0;
        PyObject *loop_type = TRACER_FIELD(self, loop_type);
        if (loop_type == NULL)
            return -1;
        if ((PyObject *)Py_TYPE(rev) == loop_type)
            inside = line_within(rev, s_body_lo, s_body_hi, line);
        Py_DECREF(loop_type);
        if (inside < 0)
            return -1;
        if (inside)
            SET_FIELD(self->rev_loop, Py_NewRef(Py_None)); /* the header check entered the body */
        else if (call_method_void(self, s_resolve_rev, line_obj, off, NULL, NULL) < 0)
            return -1;
    }
    PyObject *pending = self->cond_test;
    if (pending != Py_None) {
        int within = line_within(pending, s_lo, s_hi, line);
        if (within < 0)
            return -1;
        if (!within) {
            int body = line_within(pending, s_body_lo, s_body_hi, line);
            if (body < 0 || PyObject_SetItem(self->cond_step, s_cond, body ? Py_True : Py_False) < 0)
                return -1;
            SET_FIELD(self->cond_test, Py_NewRef(Py_None));
        }
    }
    if (self->inline_step != Py_None) {
        int seen = PyObject_IsTrue(self->inline_seen);
        if (seen < 0)
            return -1;
        if (seen && PyObject_SetItem(self->inline_step, s_cond, Py_False) < 0)
            return -1;  /* the body's first instruction never ran */
        SET_FIELD(self->inline_step, Py_NewRef(Py_None));
        if (PyObject_SetAttr(frame, s_f_trace_opcodes, Py_False) < 0)
            return -1;
    }
    return 0;
}

/* The next iteration of the innermost `for` loop (count_loops' common case, inlined). */
static int
next_iteration(Core *self, PyObject *new_step, PyObject *target, PyObject *index)
{
    PyObject *count = PyDict_GetItemWithError(self->counts, target);
    if (count == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_KeyError, "loop not counted");
        return -1;
    }
    PyObject *one = PyLong_FromLong(1);
    PyObject *next = PyNumber_Add(count, one);
    Py_DECREF(one);
    if (next == NULL)
        return -1;
    if (PyDict_SetItem(self->counts, target, next) < 0) {
        Py_DECREF(next);
        return -1;
    }
    PyObject *loop_line = PyObject_GetAttr(target, s_line);
    if (loop_line == NULL) {
        Py_DECREF(next);
        return -1;
    }
    PyObject *pair = PyTuple_Pack(2, loop_line, next);
    Py_DECREF(loop_line);
    Py_DECREF(next);
    if (pair == NULL)
        return -1;
    PyObject *old = self->loops;
    if (!PyTuple_CheckExact(old)) {
        Py_DECREF(pair);
        PyErr_SetString(PyExc_TypeError, "malformed loop counters");
        return -1;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(old);
    Py_ssize_t keep = n > 1 ? n - 1 : 0;
    PyObject *loops = PyTuple_New(keep + 1);
    if (loops == NULL) {
        Py_DECREF(pair);
        return -1;
    }
    for (Py_ssize_t i = 0; i < keep; i++)
        PyTuple_SET_ITEM(loops, i, Py_NewRef(PyTuple_GET_ITEM(old, i)));
    PyTuple_SET_ITEM(loops, keep, pair);
    if (PyDict_SetItem(new_step, s_loops, loops) < 0 ||
        PyDict_SetItem(self->template_, s_loops, loops) < 0) {
        Py_DECREF(loops);
        return -1;
    }
    SET_FIELD(self->loops, loops);
    SET_FIELD(self->rev_loop, Py_NewRef(target));
    SET_FIELD(self->rev_index, Py_NewRef(index));
    SET_FIELD(self->rev_step, Py_NewRef(new_step));
    SET_FIELD(self->rev_more, Py_NewRef(Py_None));
    return 0;
}

static int is_atom(PyObject *value);
static PyObject *atom_text(Core *self, PyObject *value, long max_chars);
static PyObject *next_step(Core *self, PyObject *frame, long line, PyObject *line_obj,
                           PyObject *off, PyObject **new_step_out);
static PyObject *record_step(Core *self, PyObject *frame, PyObject *rec, PyObject *off, long line,
                             PyObject *steps, PyObject *new_step);

/* field += delta for an int field. */
static int
add_to(PyObject **field, long delta)
{
    PyObject *amount = PyLong_FromLong(delta);
    PyObject *sum = amount == NULL ? NULL : PyNumber_Add(*field, amount);
    Py_XDECREF(amount);
    if (sum == NULL)
        return -1;
    SET_FIELD(*field, sum);
    return 0;
}

/* _Frame.first_step: the step of a frame's first line, with its arguments (the locals at
 * entry) tracked and rendered. */
static PyObject *
first_step(Core *self, PyObject *frame, PyObject *line_obj)
{
    PyObject *loc = PyFrame_GetLocals((PyFrameObject *)frame);
    if (loc == NULL)
        return NULL;
    if (!PyDict_CheckExact(loc) || !PyDict_CheckExact(self->snap) ||
        !PyDict_CheckExact(self->watch) || !PyObject_TypeCheck(self->tr, &TracerCoreType)) {
        Py_DECREF(loc);
        return call_method(self, s_first_step, frame, line_obj, NULL, NULL);
    }
    TracerCore *tr = (TracerCore *)self->tr;
    long max_chars = PyLong_AsLong(self->max_chars);
    PyObject *args = PyDict_New();
    if (args == NULL || (max_chars == -1 && PyErr_Occurred()))
        goto fail;
    Py_ssize_t pos = 0;
    PyObject *name, *value;
    while (PyDict_Next(loc, &pos, &name, &value)) {
        if (!PyUnicode_Check(name)) {
            PyErr_SetString(PyExc_TypeError, "local names must be str");
            goto fail;
        }
        PyObject *entry;
        Py_INCREF(value);
        if (is_atom(value)) {
            PyObject *text = render_text(self, value, max_chars);
            entry = text == NULL ? NULL : PyList_New(4);
            if (entry != NULL) {
                PyList_SET_ITEM(entry, 0, Py_NewRef(value));
                PyList_SET_ITEM(entry, 1, text);
                PyList_SET_ITEM(entry, 2, PyLong_FromLong(K_ID));
                PyList_SET_ITEM(entry, 3, Py_NewRef(Py_None));
            }
            else {
                Py_XDECREF(text);
            }
            if (entry != NULL && PyDict_SetItem(self->snap, name, entry) < 0)
                Py_CLEAR(entry);
        }
        else {
            entry = call_method(self, s_entry, value, NULL, NULL, NULL);
            long kind = entry == NULL ? -1 : entry_kind(entry);
            if (entry != NULL && (PyErr_Occurred() || PyDict_SetItem(self->snap, name, entry) < 0 ||
                                  (kind != K_ID && PyDict_SetItem(self->watch, name, entry) < 0)))
                Py_CLEAR(entry);
        }
        Py_DECREF(value);
        if (entry == NULL)
            goto fail;
        int failed = reported(name) && PyDict_SetItem(args, name, PyList_GET_ITEM(entry, 1)) < 0;
        Py_DECREF(entry);
        if (failed)
            goto fail;
    }
    Py_ssize_t count = PyObject_Size(tr->steps);
    Py_ssize_t limit = PyLong_AsSsize_t(tr->limit);
    if (count < 0 || (limit == -1 && PyErr_Occurred()))
        goto fail;
    if (count >= limit) {
        PyObject *stack[1] = {self->tr};
        PyObject *done = PyObject_VectorcallMethod(s_check_caps, stack, 1, NULL);
        if (done == NULL)
            goto fail;
        Py_DECREF(done);
    }
    /* Arguments never change: their size is counted at once. */
    long added = 0;
    pos = 0;
    while (PyDict_Next(args, &pos, &name, &value)) {
        if (!PyUnicode_Check(value)) {
            PyErr_SetString(PyExc_TypeError, "value texts must be str");
            goto fail;
        }
        added += (long)(PyUnicode_GET_LENGTH(name) + PyUnicode_GET_LENGTH(value) + 6);
    }
    if (added && add_to(&tr->size, added) < 0)
        goto fail;
    PyObject *step = PyDict_New();
    if (step == NULL || PyDict_SetItem(step, s_line, line_obj) < 0 ||
        PyDict_SetItem(step, s_frame, self->qual) < 0 ||
        PyDict_SetItem(step, s_fid, self->fid) < 0 ||
        PyDict_SetItem(step, s_depth, self->depth) < 0 ||
        PyDict_SetItem(step, s_loops, self->loops) < 0 ||
        PyDict_SetItem(step, s_args, args) < 0) {
        Py_XDECREF(step);
        goto fail;
    }
    Py_DECREF(args);
    Py_DECREF(loc);
    return step;
fail:
    Py_XDECREF(args);
    Py_DECREF(loc);
    return NULL;
}

/* One line event with a cached record. Returns the new step, or NULL. */
static PyObject *
line_event(Core *self, PyObject *frame, PyObject *rec, PyObject *off)
{
    PyObject *line_obj = PyTuple_GET_ITEM(rec, 6);
    long line = PyLong_AsLong(line_obj);
    if (line == -1 && PyErr_Occurred())
        return NULL;
    PyObject *steps = NULL, *new_step = NULL;
    if (self->step == Py_None) {
        /* The frame's first line: its arguments (first_step also checks the caps). */
        new_step = first_step(self, frame, line_obj);
        if (new_step == NULL)
            return NULL;
        if (!PyDict_CheckExact(new_step)) {
            PyErr_SetString(PyExc_TypeError, "first_step must return a dict");
            Py_DECREF(new_step);
            return NULL;
        }
        steps = TRACER_FIELD(self, steps);
        if (steps == NULL) {
            Py_DECREF(new_step);
            return NULL;
        }
    }
    else {
        steps = next_step(self, frame, line, line_obj, off, &new_step);
        if (steps == NULL)
            return NULL;
    }
    return record_step(self, frame, rec, off, line, steps, new_step);
}

/* Finish the previous step and start the next: returns tracer.steps, sets *new_step. */
static PyObject *
next_step(Core *self, PyObject *frame, long line, PyObject *line_obj, PyObject *off,
          PyObject **new_step_out)
{
    PyObject *step = Py_NewRef(self->step);
    SET_FIELD(self->raised, Py_NewRef(Py_False));
    int rc = finish_step(self, frame, step);
    if (rc == 0 && PyDict_CheckExact(step))
        /* The previous step is complete but for rare late edits. Steps hold only ints, strs,
         * bools, tuples and dicts of those, so they can never be part of a reference cycle:
         * leaving them to the collector would make every young-generation collection during
         * the call traverse the whole recent trace. (A late edit that stores a container
         * tracks the dict again; that is harmless.) */
        PyObject_GC_UnTrack(step);
    Py_DECREF(step);
    if (rc < 0 || settle(self, frame, line, line_obj, off) < 0)
        return NULL;
    PyObject *steps = TRACER_FIELD(self, steps);
    if (steps == NULL)
        return NULL;
    PyObject *limit = TRACER_FIELD(self, limit);
    if (limit == NULL) {
        Py_DECREF(steps);
        return NULL;
    }
    Py_ssize_t limit_v = PyLong_AsSsize_t(limit);
    Py_DECREF(limit);
    Py_ssize_t count = PyObject_Size(steps);
    if ((limit_v == -1 && PyErr_Occurred()) || count < 0) {
        Py_DECREF(steps);
        return NULL;
    }
    if (count >= limit_v) {
        PyObject *args[1] = {self->tr};
        PyObject *done = PyObject_VectorcallMethod(s_check_caps, args, 1, NULL);
        if (done == NULL) {
            Py_DECREF(steps);
            return NULL;
        }
        Py_DECREF(done);
    }
    PyObject *new_step = PyDict_Copy(self->template_);
    if (new_step == NULL || PyDict_SetItem(new_step, s_line, line_obj) < 0) {
        Py_DECREF(steps);
        Py_XDECREF(new_step);
        return NULL;
    }
    *new_step_out = new_step;
    return steps;
}

/* Loop iterations and a starting test for the new step; append it. Steals steps, new_step. */
static PyObject *
record_step(Core *self, PyObject *frame, PyObject *rec, PyObject *off, long line, PyObject *steps,
            PyObject *new_step)
{
    PyObject *point = PyTuple_GET_ITEM(rec, 0), *enc = PyTuple_GET_ITEM(rec, 1),
             *special = PyTuple_GET_ITEM(rec, 2), *test = PyTuple_GET_ITEM(rec, 3),
             *target = PyTuple_GET_ITEM(rec, 4), *index = PyTuple_GET_ITEM(rec, 5),
             *line_obj = PyTuple_GET_ITEM(rec, 6);
    if (!PyTuple_CheckExact(enc)) {
        PyErr_SetString(PyExc_TypeError, "malformed enclosing loops");
        goto fail;
    }
    int is_special = PyObject_IsTrue(special);
    if (is_special < 0)
        goto fail;
    if (enc != self->enc || is_special) {
        int common = target != Py_None && enc == self->enc && PyTuple_GET_SIZE(enc) > 0 &&
                     PyTuple_GET_ITEM(enc, PyTuple_GET_SIZE(enc) - 1) == target;
        if (common ? next_iteration(self, new_step, target, index) < 0
                   : call_method_void(self, s_count_loops, line_obj, off, new_step, enc) < 0)
            goto fail;
    }
    if (test != Py_None && self->cond_test == Py_None) {
        PyObject *inline_obj = PyObject_GetAttr(test, s_inline);
        int is_inline = inline_obj == NULL ? -1 : PyObject_IsTrue(inline_obj);
        Py_XDECREF(inline_obj);
        if (is_inline < 0)
            goto fail;
        if (!is_inline) {
            SET_FIELD(self->cond_test, Py_NewRef(test));
            SET_FIELD(self->cond_step, Py_NewRef(new_step));
        }
        else {
            long lo;
            if (int_attr(test, s_lo, &lo) < 0)
                goto fail;
            if (lo == line &&
                call_method_void(self, s_start_inline, frame, test, new_step, NULL) < 0)
                goto fail;
        }
    }
    if (PyList_CheckExact(steps) ? PyList_Append(steps, new_step) < 0 : 1) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "tracer.steps must be a list");
        goto fail;
    }
    Py_DECREF(steps);
    SET_FIELD(self->step, Py_NewRef(new_step));
    SET_FIELD(self->off, Py_NewRef(off));
    SET_FIELD(self->point, Py_NewRef(point));
    return new_step;
fail:
    Py_DECREF(steps);
    Py_XDECREF(new_step);
    return NULL;
}

/* As `local` and `_global` do: an Exception raised by the tracer (a cap's TraceOverflow, or a
 * bug) is handed to target.method([frame,] exc), which stops tracing, and the program never sees
 * it; anything else (KeyboardInterrupt) propagates. Returns the method's result. */
static PyObject *
hand_over_error(PyObject *target, PyObject *method, PyObject *frame)
{
    if (!PyErr_ExceptionMatches(PyExc_Exception))
        return NULL;
    PyObject *type, *exc, *traceback;
    PyErr_Fetch(&type, &exc, &traceback);
    PyErr_NormalizeException(&type, &exc, &traceback);
    if (traceback != NULL)
        PyException_SetTraceback(exc, traceback);
    PyObject *stack[3] = {target, frame != NULL ? frame : exc, exc};
    PyObject *result = PyObject_VectorcallMethod(method, stack, frame != NULL ? 3 : 2, NULL);
    Py_XDECREF(type);
    Py_XDECREF(exc);
    Py_XDECREF(traceback);
    return result;
}

/* _Frame.local(frame, event, arg): everything but the common line event. */
static PyObject *
delegate(Core *self, PyObject *frame, PyObject *event, PyObject *arg)
{
    return call_method(self, s_local, frame, event, arg, NULL);
}

/* A line event of the frame this FrameCore traces. Returns the frame's next trace function. */
static PyObject *
handle_line(Core *self, PyObject *frame, PyObject *arg)
{
    if (!PyFrame_Check(frame))
        return delegate(self, frame, s_line, arg);
    PyObject *stopped = TRACER_FIELD(self, stopped);
    if (stopped == NULL)
        return NULL;
    int is_stopped = PyObject_IsTrue(stopped);
    Py_DECREF(stopped);
    if (is_stopped != 0)
        return is_stopped < 0 ? NULL : delegate(self, frame, s_line, arg);
    PyObject *off = PyLong_FromLong(PyFrame_GetLasti((PyFrameObject *)frame));
    if (off == NULL)
        return NULL;
    PyObject *rec = PyDict_GetItemWithError(self->recs, off);
    if (rec == NULL || !PyTuple_CheckExact(rec) || PyTuple_GET_SIZE(rec) != 7) {
        Py_DECREF(off);
        return PyErr_Occurred() ? NULL : delegate(self, frame, s_line, arg);
    }
    Py_INCREF(rec);
    PyObject *new_step = line_event(self, frame, rec, off);
    Py_DECREF(rec);
    Py_DECREF(off);
    if (new_step == NULL) {
        return hand_over_error((PyObject *)self, s_abandon, frame);
    }
    Py_DECREF(new_step);
    return Py_NewRef(self->fn == Py_None ? (PyObject *)self : self->fn);
}

/* Called as a Python trace function (by sys.settrace's trampoline). */
static PyObject *
core_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Core *self = (Core *)callable;
    if (PyVectorcall_NARGS(nargsf) != 3 || kwnames != NULL) {
        PyErr_SetString(PyExc_TypeError, "a trace function takes (frame, event, arg)");
        return NULL;
    }
    PyObject *event = args[1];
    if (event == s_line || (PyUnicode_Check(event) && PyUnicode_Compare(event, s_line) == 0))
        return handle_line(self, args[0], args[2]);
    return delegate(self, args[0], event, args[2]);
}

/* Allocation, collector support and deallocation of a type whose fields are all objects,
 * listed by an X-macro; every field starts as None. */
#define INIT_NONE(f) self->f = Py_NewRef(Py_None);
#define VISIT_FIELD(f) Py_VISIT(self->f);
#define CLEAR_FIELD(f) Py_CLEAR(self->f);
#define OBJECT_FIELDS_TYPE(TYPE, PREFIX, FIELDS)                                     \
    static TYPE *PREFIX##_alloc(PyTypeObject *type)                                  \
    {                                                                                \
        TYPE *self = (TYPE *)type->tp_alloc(type, 0);                                \
        if (self != NULL) {                                                          \
            FIELDS(INIT_NONE)                                                        \
        }                                                                            \
        return self;                                                                 \
    }                                                                                \
    static int PREFIX##_traverse(TYPE *self, visitproc visit, void *arg)             \
    {                                                                                \
        FIELDS(VISIT_FIELD)                                                          \
        return 0;                                                                    \
    }                                                                                \
    static int PREFIX##_clear(TYPE *self)                                            \
    {                                                                                \
        FIELDS(CLEAR_FIELD)                                                          \
        return 0;                                                                    \
    }                                                                                \
    static void PREFIX##_dealloc(TYPE *self)                                         \
    {                                                                                \
        PyObject_GC_UnTrack(self);                                                   \
        PREFIX##_clear(self);                                                        \
        Py_TYPE(self)->tp_free((PyObject *)self);                                    \
    }

OBJECT_FIELDS_TYPE(Core, core, CORE_FIELDS)
OBJECT_FIELDS_TYPE(TracerCore, tracer_core, TRACER_FIELDS)

static PyObject *
core_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    Core *self = core_alloc(type);
    if (self != NULL)
        self->vectorcall = core_vectorcall;
    return (PyObject *)self;
}

static PyObject *
tracer_core_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    return (PyObject *)tracer_core_alloc(type);
}

static PyMemberDef tracer_core_members[] = {
#define MEMBER(f) {#f, T_OBJECT_EX, offsetof(TracerCore, f), 0, NULL},
    TRACER_FIELDS(MEMBER)
#undef MEMBER
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject TracerCoreType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "_tracecore.TracerCore",
    .tp_doc = "The fields of tracer.Tracer its line-event fast path uses (base of Tracer).",
    .tp_basicsize = sizeof(TracerCore),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_new = tracer_core_new,
    .tp_dealloc = (destructor)tracer_core_dealloc,
    .tp_traverse = (traverseproc)tracer_core_traverse,
    .tp_clear = (inquiry)tracer_core_clear,
    .tp_members = tracer_core_members,
};

/* `fn`, what the frame's trace function returns: None stands for the FrameCore itself, so that
 * a frame's state is not a reference cycle (left to the cyclic collector, each would cost
 * microseconds). */
static PyObject *
core_get_fn(Core *self, void *closure)
{
    return Py_NewRef(self->fn == Py_None ? (PyObject *)self : self->fn);
}

static int
core_set_fn(Core *self, PyObject *value, void *closure)
{
    if (value == NULL) {
        PyErr_SetString(PyExc_AttributeError, "fn cannot be deleted");
        return -1;
    }
    SET_FIELD(self->fn, Py_NewRef(value == (PyObject *)self ? Py_None : value));
    return 0;
}

static PyObject *
core_finish(Core *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "finish(frame, step)");
        return NULL;
    }
    if (finish_step(self, args[0], args[1]) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef core_methods[] = {
    {"finish", (PyCFunction)(void (*)(void))core_finish, METH_FASTCALL,
     "finish(frame, step): record in step what the frame's latest line changed (_Frame.update "
     "on frame.f_locals)."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef core_getset[] = {
    {"fn", (getter)core_get_fn, (setter)core_set_fn, "the frame's trace function", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMemberDef core_members[] = {
#define MEMBER(f) {#f, T_OBJECT_EX, offsetof(Core, f), 0, NULL},
    CORE_FIELDS_BUT_FN(MEMBER)
#undef MEMBER
    {"template", T_OBJECT_EX, offsetof(Core, template_), 0, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject CoreType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "_tracecore.FrameCore",
    .tp_doc = "Fields and line-event fast path of a traced frame (base of tracer.Frame).",
    .tp_basicsize = sizeof(Core),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC |
                Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_new = core_new,
    .tp_dealloc = (destructor)core_dealloc,
    .tp_traverse = (traverseproc)core_traverse,
    .tp_clear = (inquiry)core_clear,
    .tp_members = core_members,
    .tp_getset = core_getset,
    .tp_methods = core_methods,
    .tp_vectorcall_offset = offsetof(Core, vectorcall),
    .tp_call = PyVectorcall_Call,
};

/* The C-level trace function installed by settrace(hook): what sys.settrace's trampoline does
 * (the hook gets `call` events, a frame's f_trace the others, a non-None result becomes the
 * frame's f_trace, an error removes the trace function), without its copy of the fast locals
 * into f_locals before each callback and back after it, and with line events of a FrameCore
 * handled without a Python-level call. sys.gettrace() returns the hook. */
static PyObject *event_names[8];

static void
clear_f_trace(PyObject *frame)
{
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    if (PyObject_SetAttr(frame, s_f_trace, Py_None) < 0)
        PyErr_Clear();
    PyErr_Restore(type, value, traceback);
}

/* The FrameCore behind a frame's f_trace (itself, or the owner of its bound method). */
static Core *
owner_of(PyObject *trace_function)
{
    PyObject *owner = PyMethod_Check(trace_function) ? PyMethod_GET_SELF(trace_function)
                                                     : trace_function;
    return PyObject_TypeCheck(owner, &CoreType) ? (Core *)owner : NULL;
}

/* _Frame(tr, info, depth) for the C fast path: the fields _Frame.__init__ sets. */
static Core *
new_frame(TracerCore *tr, PyObject *info)
{
    if (!PyType_Check(tr->frame_type) ||
        !PyType_IsSubtype((PyTypeObject *)tr->frame_type, &CoreType)) {
        PyErr_SetString(PyExc_TypeError, "Tracer.frame_type must be a FrameCore subclass");
        return NULL;
    }
    Core *self = core_alloc((PyTypeObject *)tr->frame_type);
    if (self == NULL)
        return NULL;
    self->vectorcall = core_vectorcall;
    PyObject *qual = PyObject_GetAttr(info, s_qualname);
    PyObject *recs = qual == NULL ? NULL : PyObject_GetAttr(info, s_recs);
    PyObject *max_chars = recs == NULL ? NULL : PyObject_GetAttr(tr->render, s_max_chars);
    PyObject *template_ = max_chars == NULL ? NULL : PyDict_New();
    if (template_ == NULL)
        goto fail;
    SET_FIELD(self->tr, Py_NewRef((PyObject *)tr));
    SET_FIELD(self->info, Py_NewRef(info));
    SET_FIELD(self->qual, qual);
    SET_FIELD(self->max_chars, max_chars);
    SET_FIELD(self->fid, Py_NewRef(tr->next_fid));
    SET_FIELD(self->depth, Py_NewRef(tr->depth));
    SET_FIELD(self->recs, recs);
    qual = recs = max_chars = NULL;
    if (add_to(&tr->next_fid, 1) < 0)
        goto fail;
#define NEW(field, value)                 \
    {                                     \
        PyObject *made = (value);         \
        if (made == NULL)                 \
            goto fail;                    \
        SET_FIELD(self->field, made);     \
    }
    NEW(snap, PyDict_New())
    NEW(watch, PyDict_New())
    NEW(counts, PyDict_New())
    NEW(off, PyLong_FromLong(-1))
    NEW(rev_index, PyLong_FromLong(0))
    NEW(enc, PyTuple_New(0))
    NEW(loops, PyTuple_New(0))
#undef NEW
    SET_FIELD(self->point, Py_NewRef(tr->full_point));
    SET_FIELD(self->inline_offs, Py_NewRef(tr->no_offsets));
    SET_FIELD(self->inline_seen, Py_NewRef(Py_False));
    SET_FIELD(self->raised, Py_NewRef(Py_False));
    /* Built with room for `changes` (see _Frame.__init__). */
    if (PyDict_SetItem(template_, s_line, self->rev_index /* 0 */) < 0 ||
        PyDict_SetItem(template_, s_frame, self->qual) < 0 ||
        PyDict_SetItem(template_, s_fid, self->fid) < 0 ||
        PyDict_SetItem(template_, s_depth, self->depth) < 0 ||
        PyDict_SetItem(template_, s_loops, self->loops) < 0 ||
        PyDict_SetItem(template_, s_changes, Py_None) < 0 ||
        PyDict_DelItem(template_, s_changes) < 0)
        goto fail;
    SET_FIELD(self->template_, template_);
    return self;
fail:
    Py_XDECREF(qual);
    Py_XDECREF(recs);
    Py_XDECREF(max_chars);
    Py_XDECREF(template_);
    Py_DECREF(self);
    return NULL;
}

/* Tracer._global for a `call` event: the new frame's trace function, or None. */
static PyObject *
call_event(TracerCore *tr, PyObject *frame)
{
    int stopped = PyObject_IsTrue(tr->stopped);
    if (stopped != 0)
        return stopped < 0 ? NULL : Py_NewRef(Py_None);
    /* Python code is about to run: the caller's next event must diff everything. */
    PyFrameObject *caller = PyFrame_GetBack((PyFrameObject *)frame);
    if (caller != NULL) {
        PyObject *current = PyObject_GetAttr((PyObject *)caller, s_f_trace);
        Py_DECREF(caller);
        if (current == NULL)
            return NULL;
        Core *owner = owner_of(current);
        if (owner != NULL)
            SET_FIELD(owner->point, Py_NewRef(tr->full_point));
        Py_DECREF(current);
    }
    PyCodeObject *code = PyFrame_GetCode((PyFrameObject *)frame);
    PyObject *key = PyLong_FromVoidPtr(code);
    PyObject *info = key == NULL ? NULL : PyDict_GetItemWithError(tr->_infos, key);
    Py_XDECREF(key);
    if (info != NULL) {
        Py_INCREF(info);
    }
    else if (!PyErr_Occurred()) {
        PyObject *stack[2] = {(PyObject *)tr, (PyObject *)code};
        info = PyObject_VectorcallMethod(s_analyse, stack, 2, NULL);
    }
    Py_DECREF(code);
    if (info == NULL || info == Py_None)
        return info;
    /* From here on a failure is the tracer's: it stops tracing (Tracer._call_error). */
    PyObject *result = NULL;
    PyObject *current = PyObject_GetAttr(frame, s_f_trace);
    if (current != NULL) {
        Core *state = owner_of(current);
        if (state != NULL && state->tr == (PyObject *)tr) {
            /* A generator or coroutine resumed: same state, one level deeper than its caller. */
            Py_INCREF(state);
            SET_FIELD(state->depth, Py_NewRef(tr->depth));
            SET_FIELD(state->point, Py_NewRef(tr->full_point));
            if (PyObject_SetItem(state->template_, s_depth, tr->depth) < 0)
                Py_CLEAR(state);
        }
        else {
            state = new_frame(tr, info);
        }
        Py_DECREF(current);
        if (state != NULL && add_to(&tr->depth, 1) == 0 && add_to(&tr->events, 1) == 0)
            result = Py_NewRef(state->fn == Py_None ? (PyObject *)state : state->fn);
        Py_XDECREF(state);
    }
    Py_DECREF(info);
    return result != NULL ? result : hand_over_error((PyObject *)tr, s_call_error, NULL);
}

/* Is offset in the set-valued attribute `name` of info? 1, 0, -1. */
static int
offset_in(PyObject *info, PyObject *name, PyObject *offset)
{
    PyObject *offsets = PyObject_GetAttr(info, name);
    if (offsets == NULL)
        return -1;
    int found = PySequence_Contains(offsets, offset);
    Py_DECREF(offsets);
    return found;
}

/* step[key] = tracer.render.text(value) */
static int
set_rendered(Core *self, TracerCore *tr, PyObject *step, PyObject *key, PyObject *value)
{
    long max_chars = PyLong_AsLong(self->max_chars);
    if (max_chars == -1 && PyErr_Occurred())
        return -1;
    PyObject *text = render_text(self, value, max_chars);
    if (text == NULL)
        return -1;
    int rc = PyObject_SetItem(step, key, text);
    Py_DECREF(text);
    return rc;
}

/* _Frame.on_return for a `return` event (local's non-line path); rare cases go to local. */
static PyObject *
return_event(Core *self, PyObject *frame, PyObject *arg)
{
    PyObject *s_return = event_names[PyTrace_RETURN];
    if (!PyObject_TypeCheck(self->tr, &TracerCoreType) || self->inline_step != Py_None)
        return delegate(self, frame, s_return, arg);
    TracerCore *tr = (TracerCore *)self->tr;
    int stopped = PyObject_IsTrue(tr->stopped);
    PyObject *class_body = stopped ? NULL : PyObject_GetAttr(self->info, s_class_body);
    int is_class_body = class_body == NULL ? -1 : PyObject_IsTrue(class_body);
    Py_XDECREF(class_body);
    if (stopped != 0 || is_class_body != 0) {
        if (stopped < 0 || (stopped == 0 && is_class_body < 0))
            return NULL;
        return delegate(self, frame, s_return, arg);
    }
    PyObject *off = NULL;
    int rc = add_to(&tr->events, 1);
    if (rc == 0)
        rc = add_to(&tr->depth, -1);
    PyObject *step = Py_NewRef(self->step);
    if (rc < 0 || step == Py_None)
        goto done;
    if ((rc = finish_step(self, frame, step)) < 0)
        goto done;
    SET_FIELD(self->point, Py_NewRef(tr->no_point));
    off = PyLong_FromLong(PyFrame_GetLasti((PyFrameObject *)frame));
    int raised = PyObject_IsTrue(self->raised);
    int yielded = off == NULL || raised < 0 ? -1 : offset_in(self->info, s_yields, off);
    if (yielded < 0) {
        rc = -1;
        goto done;
    }
    if (yielded && !raised) {
        rc = set_rendered(self, tr, step, s_yield, arg);
        goto done;
    }
    if (self->cond_test != Py_None) {
        if ((rc = PyObject_SetItem(self->cond_step, s_cond, Py_False)) < 0)
            goto done;
        SET_FIELD(self->cond_test, Py_NewRef(Py_None));
    }
    if (self->rev_loop != Py_None &&
        (rc = call_method_void(self, s_resolve_rev, Py_None, Py_None, NULL, NULL)) < 0)
        goto done;
    int returned = offset_in(self->info, s_returns, off);
    if (returned < 0)
        rc = -1;
    else if (returned && !raised)
        rc = set_rendered(self, tr, step, s_ret, arg);
done:
    Py_XDECREF(off);
    Py_DECREF(step);
    if (rc == 0)
        Py_RETURN_NONE;
    return hand_over_error((PyObject *)self, s_abandon, frame);
}

static int
dispatch(PyObject *hook, PyFrameObject *frame_obj, int what, PyObject *arg)
{
    PyObject *frame = (PyObject *)frame_obj, *callback;
    if (arg == NULL)
        arg = Py_None;
    if (what < 0 || what >= 8)
        return 0;
    if (what == PyTrace_CALL) {
        callback = Py_NewRef(hook);
    }
    else {
        callback = PyObject_GetAttr(frame, s_f_trace);
        if (callback == NULL)
            return -1;
        if (callback == Py_None) {
            Py_DECREF(callback);
            return 0;
        }
    }
    PyObject *result;
    int core = Py_TYPE(callback)->tp_vectorcall_offset == offsetof(Core, vectorcall) &&
               PyObject_TypeCheck(callback, &CoreType);
    if (core && what == PyTrace_LINE) {
        result = handle_line((Core *)callback, frame, arg);
    }
    else if (core && what == PyTrace_RETURN) {
        result = return_event((Core *)callback, frame, arg);
    }
    else if (what == PyTrace_CALL && PyMethod_Check(callback) &&
             PyObject_TypeCheck(PyMethod_GET_SELF(callback), &TracerCoreType)) {
        result = call_event((TracerCore *)PyMethod_GET_SELF(callback), frame);
    }
    else {
        PyObject *stack[3] = {frame, event_names[what], arg};
        result = PyObject_Vectorcall(callback, stack, 3, NULL);
    }
    if (result == NULL) {
        Py_DECREF(callback);
        PyEval_SetTrace(NULL, NULL);
        clear_f_trace(frame);
        return -1;
    }
    int rc = 0;
    if (result != Py_None && result != callback)
        rc = PyObject_SetAttr(frame, s_f_trace, result);
    Py_DECREF(result);
    Py_DECREF(callback);
    return rc;
}

static PyObject *
settrace(PyObject *module, PyObject *hook)
{
    if (hook == Py_None)
        PyEval_SetTrace(NULL, NULL);
    else
        PyEval_SetTrace(dispatch, hook);
    if (PyErr_Occurred())
        return NULL;
    Py_RETURN_NONE;
}

/* Python 3.11 does not pass the vectorcall flag on to mutable subclasses (3.12 does); without
 * it every call of a _Frame goes through an argument tuple. Safe when the subclass keeps the
 * base's __call__ and vectorcall slot, which is checked. */
static PyObject *
enable_vectorcall(PyObject *module, PyObject *cls)
{
    if (!PyType_Check(cls) || !PyType_IsSubtype((PyTypeObject *)cls, &CoreType)) {
        PyErr_SetString(PyExc_TypeError, "expected a subclass of FrameCore");
        return NULL;
    }
    PyTypeObject *type = (PyTypeObject *)cls;
    if (type->tp_call == PyVectorcall_Call &&
        type->tp_vectorcall_offset == offsetof(Core, vectorcall)) {
        type->tp_flags |= Py_TPFLAGS_HAVE_VECTORCALL;
        PyType_Modified(type);
        Py_RETURN_TRUE;
    }
    Py_RETURN_FALSE;
}

static PyMethodDef module_methods[] = {
    {"settrace", settrace, METH_O,
     "Like sys.settrace(hook), dispatching line events of FrameCore frames in C."},
    {"enable_vectorcall", enable_vectorcall, METH_O,
     "Let a subclass of FrameCore be called without an argument tuple; True if done."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_tracecore",
    "C fast path of the sandbox tracer's line events (see tracer.py).", -1, module_methods,
};

#define INTERN(var, text)                                 \
    if ((var = PyUnicode_InternFromString(text)) == NULL) \
        return NULL;

PyMODINIT_FUNC
PyInit__tracecore(void)
{
    INTERN(s_line, "line") INTERN(s_local, "local") INTERN(s_stopped, "stopped")
    INTERN(s_store, "store") INTERN(s_rebind_all, "rebind_all")
    INTERN(s_count_loops, "count_loops") INTERN(s_resolve_rev, "resolve_rev")
    INTERN(s_start_inline, "start_inline") INTERN(s_abandon, "abandon")
    INTERN(s_check_caps, "check_caps") INTERN(s_steps, "steps") INTERN(s_limit, "limit")
    INTERN(s_size, "size") INTERN(s_render, "render") INTERN(s_text, "text")
    INTERN(s_bound, "bound") INTERN(s_with_fingerprint, "with_fingerprint")
    INTERN(s_changes, "changes") INTERN(s_cond, "cond") INTERN(s_loops, "loops")
    INTERN(s_f_trace_opcodes, "f_trace_opcodes") INTERN(s_body_lo, "body_lo")
    INTERN(s_body_hi, "body_hi") INTERN(s_lo, "lo") INTERN(s_hi, "hi")
    INTERN(s_inline, "inline") INTERN(s_recheck_foreign, "recheck_foreign")
    INTERN(s_f_trace, "f_trace") INTERN(s_bind, "bind") INTERN(s_drop_missing, "drop_missing")
    INTERN(s_first_step, "first_step") INTERN(s_entry, "entry") INTERN(s_frame, "frame")
    INTERN(s_fid, "fid") INTERN(s_depth, "depth") INTERN(s_args, "args")
    INTERN(s_qualname, "qualname") INTERN(s_recs, "recs") INTERN(s_max_chars, "max_chars")
    INTERN(s_analyse, "_analyse") INTERN(s_call_error, "_call_error") INTERN(s_yields, "yields")
    INTERN(s_returns, "returns") INTERN(s_class_body, "class_body") INTERN(s_ret, "ret")
    INTERN(s_yield, "yield") INTERN(s_missing, "missing") INTERN(s_loop_type, "loop_type")
    INTERN(event_names[PyTrace_CALL], "call") INTERN(event_names[PyTrace_EXCEPTION], "exception")
    INTERN(event_names[PyTrace_LINE], "line") INTERN(event_names[PyTrace_RETURN], "return")
    INTERN(event_names[PyTrace_C_CALL], "c_call")
    INTERN(event_names[PyTrace_C_EXCEPTION], "c_exception")
    INTERN(event_names[PyTrace_C_RETURN], "c_return") INTERN(event_names[PyTrace_OPCODE], "opcode")
    if (PyType_Ready(&CoreType) < 0 || PyType_Ready(&TracerCoreType) < 0)
        return NULL;
    PyObject *module = PyModule_Create(&module_def);
    if (module == NULL)
        return NULL;
    if (PyModule_AddObjectRef(module, "FrameCore", (PyObject *)&CoreType) < 0 ||
        PyModule_AddObjectRef(module, "TracerCore", (PyObject *)&TracerCoreType) < 0 ||
        PyModule_AddIntConstant(module, "ABI", CORE_ABI) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
