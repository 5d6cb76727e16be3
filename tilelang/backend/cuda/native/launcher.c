/* A CPython extension type that launches one CUDA kernel: the per-call path of
 * `tilelang.backend.cuda.native_launch`.
 *
 * Why C: a launch through ctypes costs one Python store per parameter slot plus
 * ctypes' per-argument conversion of cuLaunchKernel's eleven arguments, several
 * microseconds on top of the driver's own cost. Here a call reads each parameter
 * once, packs it into a buffer on the C stack and calls cuLaunchKernel directly.
 *
 * The object is built once per kernel with everything that does not change between
 * calls: the cuLaunchKernel address (taken from libcuda by the Python side, so this
 * file links against nothing but Python), the CUfunction, block shape, dynamic
 * shared memory, the kind of every parameter slot and where its value comes from.
 *
 *   launcher(values, dyn)              -- fixed grid given at construction
 *   launcher(values, dyn, gx, gy, gz)  -- grid computed by the caller
 *
 * `values` is the list of kernel parameters (tensors for pointer slots), `dyn` the
 * sequence of dynamic-dimension ints that follow them. The parameter buffer lives
 * on the stack of each call (cuLaunchKernel copies it before returning), so calls
 * from several threads never share it. No Python code runs between packing the
 * first slot and the launch except the C-level getters listed below, so a call is
 * not interleaved with another thread's.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the parameter packing below assumes a little-endian host (x86-64, aarch64)"
#endif

typedef int (*launch_fn_t)(void *func, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                           unsigned smem, void *stream, void **params, void **extra);

#define MAX_SLOTS 128
#define MAX_TMAPS 16

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    launch_fn_t launch;
    void *func;
    unsigned block[3];
    unsigned grid[3];
    int fixed_grid;
    unsigned smem;
    Py_ssize_t n_slots;
    char kinds[MAX_SLOTS];       /* one code per slot, see pack_slot */
    Py_ssize_t source[MAX_SLOTS]; /* >= 0: index into values; < 0: -(index into dyn) - 1 */
    PyObject *helpers[MAX_SLOTS]; /* 'e'/'g': half_bits(value, fmt); 'M': the tensor-map encoder */
    PyObject *stream_fn;          /* stream_fn(stream_arg) -> int handle of the current stream */
    PyObject *stream_arg;
    PyObject *on_error;           /* on_error(result, grid, block, stream, params_address) */
    PyObject *data_ptr_name;
    PyObject *address_name;
    PyObject *fmt_f16;
    PyObject *fmt_bf16;
} Launcher;

static void Launcher_dealloc(Launcher *self) {
    for (Py_ssize_t i = 0; i < self->n_slots; i++) Py_XDECREF(self->helpers[i]);
    Py_XDECREF(self->stream_fn);
    Py_XDECREF(self->stream_arg);
    Py_XDECREF(self->on_error);
    Py_XDECREF(self->data_ptr_name);
    Py_XDECREF(self->address_name);
    Py_XDECREF(self->fmt_f16);
    Py_XDECREF(self->fmt_bf16);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* An int returned by a Python call, as an unsigned 64-bit value; -1 with an exception set on failure. */
static int take_u64(PyObject *obj, uint64_t *out) {
    if (obj == NULL) return -1;
    unsigned long long v = PyLong_AsUnsignedLongLongMask(obj);
    Py_DECREF(obj);
    if (v == (unsigned long long)-1 && PyErr_Occurred()) return -1;
    *out = (uint64_t)v;
    return 0;
}

static PyObject *call_method1(PyObject *name, PyObject *obj) {
    PyObject *args[1] = {obj};
    return PyObject_VectorcallMethod(name, args, 1, NULL);
}

/* Pack one slot's value into `dst` (8 bytes; 128 for a tensor map). 0 on success. */
static int pack_slot(Launcher *self, Py_ssize_t i, PyObject *value, unsigned char *dst) {
    uint64_t u;
    long long s;
    double d;
    switch (self->kinds[i]) {
    case 'p': /* a tensor: its device address */
        if (take_u64(call_method1(self->data_ptr_name, value), &u)) return -1;
        memcpy(dst, &u, 8);
        return 0;
    case 'b': case 'h': case 'i': case 'q':
    case 'B': case 'H': case 'I': case 'Q': {
        /* the value as 64-bit two's complement (unsigned kinds wrap, as ctypes does; signed ones
           raise past 64 bits), then its low bytes: on a little-endian host the leading ones */
        char kind = self->kinds[i];
        if (kind >= 'a') {
            s = PyLong_AsLongLong(value);
            if (s == -1 && PyErr_Occurred()) return -1;
            u = (uint64_t)s;
        } else {
            PyObject *idx = PyNumber_Index(value);
            if (idx == NULL) return -1;
            u = PyLong_AsUnsignedLongLongMask(idx);
            Py_DECREF(idx);
            if (u == (uint64_t)-1 && PyErr_Occurred()) return -1;
        }
        size_t width = (kind == 'b' || kind == 'B') ? 1 : (kind == 'h' || kind == 'H') ? 2 : (kind == 'i' || kind == 'I') ? 4 : 8;
        memcpy(dst, &u, width);
        return 0;
    }
    case '?': {
        int t = PyObject_IsTrue(value);
        if (t < 0) return -1;
        dst[0] = (unsigned char)t;
        return 0;
    }
    case 'f': case 'd': {
        d = PyFloat_AsDouble(value);
        if (d == -1.0 && PyErr_Occurred()) return -1;
        if (self->kinds[i] == 'f') {
            float f = (float)d;
            memcpy(dst, &f, 4);
        } else {
            memcpy(dst, &d, 8);
        }
        return 0;
    }
    case 'e': case 'g': { /* 16-bit floats: the bits from the Python helper (one rounding rule everywhere) */
        PyObject *args[2] = {value, self->kinds[i] == 'e' ? self->fmt_f16 : self->fmt_bf16};
        if (take_u64(PyObject_Vectorcall(self->helpers[i], args, 2, NULL), &u)) return -1;
        uint16_t v16 = (uint16_t)u;
        memcpy(dst, &v16, 2);
        return 0;
    }
    case 'M': { /* a TMA descriptor encoded for this tensor: 128 bytes copied into the parameter */
        PyObject *margs[2] = {self->helpers[i], value};
        if (take_u64(PyObject_VectorcallMethod(self->address_name, margs, 2, NULL), &u)) return -1;
        memcpy(dst, (const void *)(uintptr_t)u, 128);
        return 0;
    }
    }
    PyErr_Format(PyExc_RuntimeError, "tilelang launcher: unknown slot kind '%c'", self->kinds[i]);
    return -1;
}

static int read_grid(PyObject *const *args, unsigned grid[3]) {
    for (int k = 0; k < 3; k++) {
        long long g = PyLong_AsLongLong(args[k]);
        if (g == -1 && PyErr_Occurred()) return -1;
        if (g > 0xFFFFFFFFLL) {
            PyErr_Format(PyExc_ValueError, "grid dimension %d is %lld: more than a launch allows", k, g);
            return -1;
        }
        grid[k] = g > 0 ? (unsigned)g : 0; /* an empty (or negative) extent launches nothing */
    }
    return 0;
}

static PyObject *Launcher_call(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    Launcher *self = (Launcher *)callable;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (kwnames != NULL && PyTuple_GET_SIZE(kwnames)) {
        PyErr_SetString(PyExc_TypeError, "tilelang launcher takes no keyword arguments");
        return NULL;
    }
    if (nargs != (self->fixed_grid ? 2 : 5)) {
        PyErr_Format(PyExc_TypeError, "tilelang launcher takes %d arguments, got %zd", self->fixed_grid ? 2 : 5, nargs);
        return NULL;
    }
    unsigned grid[3];
    if (self->fixed_grid) {
        memcpy(grid, self->grid, sizeof grid);
    } else if (read_grid(args + 2, grid)) {
        return NULL;
    }
    if (grid[0] == 0 || grid[1] == 0 || grid[2] == 0) Py_RETURN_NONE; /* an empty problem: nothing to launch */

    PyObject *values = PySequence_Fast(args[0], "kernel parameter values must be a list");
    if (values == NULL) return NULL;
    PyObject *dyn = PySequence_Fast(args[1], "dynamic dimensions must be a sequence");
    if (dyn == NULL) {
        Py_DECREF(values);
        return NULL;
    }

    /* every slot takes 8 bytes; a tensor map 128 at a 64-byte boundary (at most 56 bytes of padding) */
    _Alignas(64) unsigned char storage[MAX_SLOTS * 8 + MAX_TMAPS * (128 + 64)];
    void *params[MAX_SLOTS];
    size_t offset = 0;
    PyObject *result = NULL;
    for (Py_ssize_t i = 0; i < self->n_slots; i++) {
        Py_ssize_t src = self->source[i];
        /* sizes re-read and the item held per slot: packing may run Python code (a tensor-map
           encoder), which must not be able to free what is being packed */
        PyObject *seq = src >= 0 ? values : dyn;
        Py_ssize_t at = src >= 0 ? src : -src - 1, have = PySequence_Fast_GET_SIZE(seq);
        if (at >= have) {
            PyErr_Format(PyExc_TypeError, "tilelang launcher: %zd %s given, slot %zd needs #%zd", have,
                         src >= 0 ? "parameter values" : "dynamic dimensions", i, at);
            goto done;
        }
        PyObject *value = PySequence_Fast_GET_ITEM(seq, at);
        size_t size = self->kinds[i] == 'M' ? 128 : 8;
        if (self->kinds[i] == 'M') offset = (offset + 63) / 64 * 64;
        memset(storage + offset, 0, size);
        Py_INCREF(value);
        int failed = pack_slot(self, i, value, storage + offset);
        Py_DECREF(value);
        if (failed) goto done;
        params[i] = storage + offset;
        offset += size;
    }
    {
        uint64_t stream;
        PyObject *s = self->stream_arg ? PyObject_CallOneArg(self->stream_fn, self->stream_arg)
                                       : PyObject_CallNoArgs(self->stream_fn);
        if (take_u64(s, &stream)) goto done;
        int res = self->launch(self->func, grid[0], grid[1], grid[2], self->block[0], self->block[1],
                               self->block[2], self->smem, (void *)(uintptr_t)stream, params, NULL);
        if (res != 0) {
            /* the Python side explains the error (or binds a context and launches again) */
            PyObject *r = PyObject_CallFunction(self->on_error, "i(III)(III)KK", res, grid[0], grid[1], grid[2],
                                                self->block[0], self->block[1], self->block[2],
                                                (unsigned long long)stream, (unsigned long long)(uintptr_t)params);
            if (r == NULL) goto done;
            Py_DECREF(r);
        }
    }
    result = Py_None;
    Py_INCREF(result);
done:
    Py_DECREF(values);
    Py_DECREF(dyn);
    return result;
}

static PyObject *Launcher_vectorcall_entry(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    return Launcher_call(callable, args, nargsf, kwnames);
}

/* Launcher(launch_address, func_address, block, smem, grid_or_None, kinds, sources, helpers,
 *          stream_fn, stream_arg_or_None, on_error) */
static PyObject *Launcher_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    unsigned long long launch_addr, func_addr;
    unsigned bx, by, bz, smem;
    PyObject *grid, *sources, *helpers, *stream_fn, *stream_arg, *on_error;
    const char *kinds;
    Py_ssize_t n_kinds;
    if (kwds != NULL && PyDict_Size(kwds)) {
        PyErr_SetString(PyExc_TypeError, "Launcher() takes no keyword arguments");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "KK(III)IOs#OOOOO", &launch_addr, &func_addr, &bx, &by, &bz, &smem, &grid, &kinds,
                          &n_kinds, &sources, &helpers, &stream_fn, &stream_arg, &on_error))
        return NULL;
    if (n_kinds > MAX_SLOTS) {
        PyErr_Format(PyExc_ValueError, "tilelang launcher: %zd parameter slots, at most %d", n_kinds, MAX_SLOTS);
        return NULL;
    }
    Py_ssize_t n_tmaps = 0;
    for (Py_ssize_t i = 0; i < n_kinds; i++) n_tmaps += kinds[i] == 'M';
    if (n_tmaps > MAX_TMAPS) {
        PyErr_Format(PyExc_ValueError, "tilelang launcher: %zd tensor maps, at most %d", n_tmaps, MAX_TMAPS);
        return NULL;
    }
    if (PySequence_Length(sources) != n_kinds || PySequence_Length(helpers) != n_kinds) {
        PyErr_SetString(PyExc_ValueError, "tilelang launcher: kinds, sources and helpers differ in length");
        return NULL;
    }
    Launcher *self = (Launcher *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->vectorcall = Launcher_vectorcall_entry;
    self->launch = (launch_fn_t)(uintptr_t)launch_addr;
    self->func = (void *)(uintptr_t)func_addr;
    self->block[0] = bx, self->block[1] = by, self->block[2] = bz;
    self->smem = smem;
    self->n_slots = 0;
    if (grid != Py_None) {
        if (!PyArg_ParseTuple(grid, "III", &self->grid[0], &self->grid[1], &self->grid[2])) goto fail;
        self->fixed_grid = 1;
    }
    for (Py_ssize_t i = 0; i < n_kinds; i++) {
        PyObject *src = PySequence_GetItem(sources, i);
        if (src == NULL) goto fail;
        self->source[i] = PyLong_AsSsize_t(src);
        Py_DECREF(src);
        if (self->source[i] == -1 && PyErr_Occurred()) goto fail;
        self->helpers[i] = PySequence_GetItem(helpers, i);
        if (self->helpers[i] == NULL) goto fail;
        self->kinds[i] = kinds[i];
        self->n_slots = i + 1;
    }
    Py_INCREF(stream_fn), self->stream_fn = stream_fn;
    if (stream_arg != Py_None) Py_INCREF(stream_arg), self->stream_arg = stream_arg;
    Py_INCREF(on_error), self->on_error = on_error;
    self->data_ptr_name = PyUnicode_InternFromString("data_ptr");
    self->address_name = PyUnicode_InternFromString("address");
    self->fmt_f16 = PyUnicode_InternFromString("float16");
    self->fmt_bf16 = PyUnicode_InternFromString("bfloat16");
    if (!self->data_ptr_name || !self->address_name || !self->fmt_f16 || !self->fmt_bf16) goto fail;
    return (PyObject *)self;
fail:
    Py_DECREF(self);
    return NULL;
}

static PyObject *Launcher_tp_call(PyObject *callable, PyObject *args, PyObject *kwargs) {
    return PyVectorcall_Call(callable, args, kwargs);
}

static PyTypeObject LauncherType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tilelang_launcher.Launcher",
    .tp_basicsize = sizeof(Launcher),
    .tp_dealloc = (destructor)Launcher_dealloc,
    .tp_vectorcall_offset = offsetof(Launcher, vectorcall),
    .tp_call = Launcher_tp_call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "Launches one CUDA kernel with cuLaunchKernel (tilelang.backend.cuda.native_launch).",
    .tp_new = Launcher_new,
};

static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "tilelang_launcher", NULL, -1, NULL, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit_tilelang_launcher(void) {
    if (PyType_Ready(&LauncherType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module_def);
    if (m == NULL) return NULL;
    Py_INCREF(&LauncherType);
    if (PyModule_AddObject(m, "Launcher", (PyObject *)&LauncherType) < 0) {
        Py_DECREF(&LauncherType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
