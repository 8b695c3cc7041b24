/*
 * broker_app.storage._recordwalk: the per-record walk of LogValidator in C.
 *
 * Contract: walk(body, records_count, base_timestamp, low_hi, low_lo, high_hi, high_lo,
 * compacted)
 * walks the (already decompressed) records of one v2 batch exactly as the reference
 * (records.decode_records followed by log_validator.validate_client_batch's loop) does, and
 * returns None when the reference would accept the batch, or a tuple
 * (code, record_index, a, b, what) naming the reference's first error; the Python side
 * (log_validator._native_error) formats the reference's message from it. The timestamp
 * window [low, high] comes as two 128-bit integers split in (signed high 64 bits, unsigned
 * low 64 bits), because Kafka's window can end past int64 (now + Long.MAX_VALUE).
 *
 * Why 128-bit arithmetic: the reference decodes varints of up to 10 bytes into Python ints
 * (70 bits) and compares and prints them unbounded; __int128 holds every value it can reach
 * (|x| < 2^71), so verdicts and the numbers in messages stay identical on hostile input.
 *
 * Order of errors, as in the reference: any structural error (varints, lengths, header
 * counts, trailing bytes) wins over the first offsetDelta / null key / timestamp error,
 * because the reference decodes every record before it checks offsets, keys and timestamps;
 * within a record, offsetDelta, then a null key (only when `compacted`), then timestamp.
 *
 * Built against the limited API of CPython 3.11 (abi3), so one wheel fits every 3.11+.
 */
#define Py_LIMITED_API 0x030B0000
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#ifndef HW_SOURCE_SHA
#define HW_SOURCE_SHA "unknown"
#endif

typedef __int128 i128;
typedef unsigned __int128 u128;

/* Codes shared with log_validator.py (_NATIVE_*); keep both lists in step. */
enum {
    E_VARINT_EOF = 1,       /* a: position */
    E_VARINT_LONG = 2,      /* a: position after the 10th byte */
    E_LENGTH = 3,           /* i, a: length, b: bytes left */
    E_BYTES = 4,            /* what, a: n */
    E_HEADER_COUNT = 5,     /* i, a: count */
    E_NULL_HEADER_KEY = 6,  /* i */
    E_LENGTH_MISMATCH = 7,  /* i, a: length, b: bytes the fields used */
    E_TRAILING = 8,         /* a: bytes left */
    E_OFFSET_DELTA = 9,     /* i, a: offsetDelta */
    E_TIMESTAMP = 10,       /* i, a: timestamp */
    E_NULL_KEY = 11,        /* i: a record without a key in a compacted topic */
};

enum { W_KEY = 0, W_VALUE = 1, W_HEADER_KEY = 2, W_HEADER_VALUE = 3 };

typedef struct {
    int code;
    int what;
    Py_ssize_t index;
    i128 a;
    i128 b;
} walk_error;

/* Zigzag varint, Python's records._read_varint: at most 10 bytes, value kept unbounded. */
static inline int read_varint(const uint8_t *buf, Py_ssize_t len, Py_ssize_t *pos, i128 *out,
                              walk_error *e) {
    Py_ssize_t p = *pos;
    if (p < len && buf[p] < 0x80) { /* one byte: the usual case */
        uint8_t b = buf[p];
        *out = (i128)(b >> 1) ^ -(i128)(b & 1);
        *pos = p + 1;
        return 0;
    }
    u128 raw = 0;
    int shift = 0;
    for (;;) {
        if (p >= len) {
            e->code = E_VARINT_EOF;
            e->a = p;
            return -1;
        }
        uint8_t b = buf[p++];
        raw |= (u128)(b & 0x7F) << shift;
        if (!(b & 0x80))
            break;
        shift += 7;
        if (shift > 63) {
            e->code = E_VARINT_LONG;
            e->a = p;
            return -1;
        }
    }
    *out = (i128)(raw >> 1) ^ -(i128)(raw & 1);
    *pos = p;
    return 0;
}

/* records._read_bytes: a varint length, -1 (any negative) is null; *is_null says which. */
static inline int read_bytes(const uint8_t *buf, Py_ssize_t len, Py_ssize_t *pos, int what,
                             int *is_null, walk_error *e) {
    i128 n;
    if (read_varint(buf, len, pos, &n, e))
        return -1;
    if (n < 0) {
        *is_null = 1;
        return 0;
    }
    *is_null = 0;
    if ((i128)*pos + n > (i128)len) {
        e->code = E_BYTES;
        e->what = what;
        e->a = n;
        return -1;
    }
    *pos += (Py_ssize_t)n;
    return 0;
}

/* Python's floor division by 2 (the reference's `(end - pos) // 2`, negative when pos > end). */
static inline i128 floor_half(i128 d) { return d >= 0 ? d / 2 : -((1 - d) / 2); }

/* 0 when the batch passes; -1 with *e filled when it does not. */
static int walk_records(const uint8_t *buf, Py_ssize_t len, Py_ssize_t count, i128 base_ts,
                        i128 low, i128 high, int compacted, walk_error *e) {
    walk_error rule = {0}; /* first offsetDelta / timestamp error, reported last */
    Py_ssize_t pos = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        i128 length, ts_delta, off_delta, n_headers;
        int is_null, key_null;
        if (read_varint(buf, len, &pos, &length, e))
            return -1;
        i128 end = (i128)pos + length;
        if (length < 1 || end > (i128)len) {
            e->code = E_LENGTH;
            e->index = i;
            e->a = length;
            e->b = (i128)len - pos;
            return -1;
        }
        pos += 1; /* record attributes, unused */
        if (read_varint(buf, len, &pos, &ts_delta, e) ||
            read_varint(buf, len, &pos, &off_delta, e) ||
            read_bytes(buf, len, &pos, W_KEY, &key_null, e) ||
            read_bytes(buf, len, &pos, W_VALUE, &is_null, e) ||
            read_varint(buf, len, &pos, &n_headers, e))
            return -1;
        if (n_headers < 0 || n_headers > floor_half(end - pos)) {
            e->code = E_HEADER_COUNT;
            e->index = i;
            e->a = n_headers;
            return -1;
        }
        for (i128 k = 0; k < n_headers; k++) {
            if (read_bytes(buf, len, &pos, W_HEADER_KEY, &is_null, e))
                return -1;
            if (is_null) {
                e->code = E_NULL_HEADER_KEY;
                e->index = i;
                return -1;
            }
            if (read_bytes(buf, len, &pos, W_HEADER_VALUE, &is_null, e))
                return -1;
        }
        if ((i128)pos != end) {
            e->code = E_LENGTH_MISMATCH;
            e->index = i;
            e->a = length;
            e->b = length + pos - end;
            return -1;
        }
        if (!rule.code) {
            if (off_delta != (i128)i) {
                rule.code = E_OFFSET_DELTA;
                rule.index = i;
                rule.a = off_delta;
            } else if (compacted && key_null) {
                rule.code = E_NULL_KEY;
                rule.index = i;
            } else {
                i128 ts = base_ts + ts_delta;
                if (ts != -1 && (ts < low || ts > high)) {
                    rule.code = E_TIMESTAMP;
                    rule.index = i;
                    rule.a = ts;
                }
            }
        }
    }
    if (pos != len) {
        e->code = E_TRAILING;
        e->a = (i128)len - pos;
        return -1;
    }
    if (rule.code) {
        *e = rule;
        return -1;
    }
    return 0;
}

static PyObject *long_from_i128(i128 v) {
    if (v >= INT64_MIN && v <= INT64_MAX)
        return PyLong_FromLongLong((long long)v);
    /* (hi << 64) + lo, hi signed: exact for every 128-bit value. */
    PyObject *hi = PyLong_FromLongLong((long long)(v >> 64));
    PyObject *lo = PyLong_FromUnsignedLongLong((unsigned long long)(u128)v);
    PyObject *sixty_four = PyLong_FromLong(64);
    PyObject *shifted = NULL, *out = NULL;
    if (hi && lo && sixty_four)
        shifted = PyNumber_Lshift(hi, sixty_four);
    if (shifted)
        out = PyNumber_Add(shifted, lo);
    Py_XDECREF(hi);
    Py_XDECREF(lo);
    Py_XDECREF(sixty_four);
    Py_XDECREF(shifted);
    return out;
}

static i128 join_i128(long long hi, unsigned long long lo) {
    return (i128)(((u128)(uint64_t)hi << 64) | (u128)lo);
}

/* Below this many bytes the walk is shorter than giving the GIL away and back. */
#define RELEASE_GIL_BYTES (64 * 1024)

static PyObject *walk(PyObject *self, PyObject *args) {
    PyObject *obj;
    Py_ssize_t count;
    long long base_ts, low_hi, high_hi;
    unsigned long long low_lo, high_lo;
    int compacted = 0;
    (void)self;
    if (!PyArg_ParseTuple(args, "OnLLKLK|i", &obj, &count, &base_ts, &low_hi, &low_lo, &high_hi,
                          &high_lo, &compacted))
        return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(obj, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    walk_error e = {0};
    int rc;
    i128 low = join_i128(low_hi, low_lo), high = join_i128(high_hi, high_lo);
    if (view.len >= RELEASE_GIL_BYTES) {
        /* The exported buffer stays valid and unresized while we hold the view. */
        Py_BEGIN_ALLOW_THREADS
        rc = walk_records((const uint8_t *)view.buf, view.len, count, base_ts, low, high,
                          compacted, &e);
        Py_END_ALLOW_THREADS
    } else {
        rc = walk_records((const uint8_t *)view.buf, view.len, count, base_ts, low, high,
                          compacted, &e);
    }
    PyBuffer_Release(&view);
    if (rc == 0)
        Py_RETURN_NONE;
    PyObject *a = long_from_i128(e.a);
    PyObject *b = long_from_i128(e.b);
    PyObject *out = NULL;
    if (a && b)
        out = Py_BuildValue("(inOOi)", e.code, e.index, a, b, e.what);
    Py_XDECREF(a);
    Py_XDECREF(b);
    return out;
}

static PyMethodDef methods[] = {
    {"walk", walk, METH_VARARGS,
     "walk(body, records_count, base_timestamp, low_hi, low_lo, high_hi, high_lo, "
     "compacted=0) -> "
     "None | (code, record_index, a, b, what): the reference's verdict on one batch's records."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_recordwalk",
    "LogValidator's per-record walk (see log_validator.py for the Python reference).", -1,
    methods,
};

PyMODINIT_FUNC PyInit__recordwalk(void) {
    PyObject *m = PyModule_Create(&module);
    if (m && PyModule_AddStringConstant(m, "SOURCE_SHA", HW_SOURCE_SHA) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
