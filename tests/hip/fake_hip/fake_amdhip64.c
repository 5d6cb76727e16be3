/* A fake libamdhip64 for tests without an AMD GPU: every HIP call the runtime makes is
 * recorded, one JSON object per line, in the file named by $FAKE_HIP_LOG, and answered
 * with hipSuccess -- or with the error code $FAKE_HIP_FAIL names for that call
 * ("hipModuleGetFunction:500,hipModuleLaunchKernel:701").
 *
 * What a test can read back: the code object handed to hipModuleLoadData (its length,
 * read from its ELF header as the real loader does, and its FNV-1a 64-bit hash), kernel
 * names, grid/block dimensions, dynamic LDS bytes, the stream, and each launch's packed
 * parameters as hex bytes ($FAKE_HIP_ARG_BYTES gives the width of each: "8,8,4").
 * Device and function attributes come from $FAKE_HIP_ATTR_<n> / $FAKE_HIP_FUNC_ATTR_<n>
 * (n: the enum value) over the defaults of an MI250-class device below; hipGetDevice answers
 * $FAKE_HIP_DEVICE (default 0).
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int hipError_t;

static void log_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void log_line(const char *fmt, ...) {
    const char *path = getenv("FAKE_HIP_LOG");
    if (path == NULL) return;
    FILE *f = fopen(path, "a");
    if (f == NULL) return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fputc('\n', f);
    fclose(f);
}

/* The code $FAKE_HIP_FAIL gives `call`, else 0. */
static hipError_t injected(const char *call) {
    const char *spec = getenv("FAKE_HIP_FAIL");
    size_t n = strlen(call);
    while (spec != NULL && *spec) {
        if (strncmp(spec, call, n) == 0 && spec[n] == ':') return atoi(spec + n + 1);
        spec = strchr(spec, ',');
        if (spec != NULL) spec++;
    }
    return 0;
}

static long env_long(const char *prefix, int n, long fallback) {
    char name[64];
    snprintf(name, sizeof name, "%s%d", prefix, n);
    const char *v = getenv(name);
    return v != NULL ? strtol(v, NULL, 0) : fallback;
}

hipError_t hipInit(unsigned int flags) {
    log_line("{\"call\": \"hipInit\", \"flags\": %u}", flags);
    return injected("hipInit");
}

hipError_t hipGetDevice(int *device) {
    const char *current = getenv("FAKE_HIP_DEVICE"); /* the calling thread's current device */
    *device = current != NULL ? atoi(current) : 0;
    log_line("{\"call\": \"hipGetDevice\", \"device\": %d}", *device);
    return injected("hipGetDevice");
}

hipError_t hipSetDevice(int device) {
    log_line("{\"call\": \"hipSetDevice\", \"device\": %d}", device);
    return injected("hipSetDevice");
}

static long default_attribute(int attr) {
    switch (attr) {
    case 26: case 27: case 56: return 1024; /* max block dim x/y, threads per block */
    case 28: return 1024;                   /* max block dim z */
    case 29: return 2147483647;             /* max grid dim x */
    case 30: case 31: return 65536;         /* max grid dim y, z */
    case 74: return 65536;                  /* LDS per workgroup */
    case 87: return 64;                     /* wavefront size */
    }
    return 0;
}

hipError_t hipDeviceGetAttribute(int *value, int attr, int device) {
    *value = (int)env_long("FAKE_HIP_ATTR_", attr, default_attribute(attr));
    log_line("{\"call\": \"hipDeviceGetAttribute\", \"attr\": %d, \"device\": %d, \"value\": %d}", attr, device, *value);
    return injected("hipDeviceGetAttribute");
}

/* The length of an ELF64 image: the end of its section or program header table, whichever is
   last (where a linker puts the section headers); -1 when it is not ELF64. */
static long long image_length(const unsigned char *p) {
    if (memcmp(p, "\177ELF", 4) != 0 || p[4] != 2) return -1;
    uint64_t phoff, shoff;
    uint16_t phentsize, phnum, shentsize, shnum;
    memcpy(&phoff, p + 32, 8), memcpy(&shoff, p + 40, 8);
    memcpy(&phentsize, p + 54, 2), memcpy(&phnum, p + 56, 2);
    memcpy(&shentsize, p + 58, 2), memcpy(&shnum, p + 60, 2);
    uint64_t a = phoff + (uint64_t)phentsize * phnum, b = shoff + (uint64_t)shentsize * shnum;
    return (long long)(a > b ? a : b);
}

static int n_modules;

hipError_t hipModuleLoadData(void **module, const void *image) {
    const unsigned char *p = image;
    long long len = image_length(p);
    uint64_t h = 1469598103934665603ULL;
    for (long long i = 0; i < len; i++) h = (h ^ p[i]) * 1099511628211ULL;
    hipError_t res = injected("hipModuleLoadData");
    *module = res ? NULL : (void *)(uintptr_t)(0x5000 + 0x10 * ++n_modules);
    log_line("{\"call\": \"hipModuleLoadData\", \"bytes\": %lld, \"fnv1a\": \"%016llx\", \"e_machine\": %d, "
             "\"module\": %llu}", len, (unsigned long long)h, len < 0 ? -1 : p[18] | p[19] << 8,
             (unsigned long long)(uintptr_t)*module);
    return res;
}

#define MAX_FUNCS 64
static char func_names[MAX_FUNCS][128];
static int n_funcs;

hipError_t hipModuleGetFunction(void **function, void *module, const char *name) {
    hipError_t res = injected("hipModuleGetFunction");
    int id = -1;
    for (int i = 0; i < n_funcs; i++)
        if (strcmp(func_names[i], name) == 0) id = i;
    if (id < 0 && n_funcs < MAX_FUNCS) {
        snprintf(func_names[n_funcs], sizeof func_names[0], "%s", name);
        id = n_funcs++;
    }
    *function = res ? NULL : (void *)(uintptr_t)(0x1000 + 0x10 * id);
    log_line("{\"call\": \"hipModuleGetFunction\", \"module\": %llu, \"name\": \"%s\", \"function\": %llu}",
             (unsigned long long)(uintptr_t)module, name, (unsigned long long)(uintptr_t)*function);
    return res;
}

hipError_t hipFuncGetAttribute(int *value, int attr, void *function) {
    *value = (int)env_long("FAKE_HIP_FUNC_ATTR_", attr, 0);
    log_line("{\"call\": \"hipFuncGetAttribute\", \"attr\": %d, \"function\": %llu, \"value\": %d}", attr,
             (unsigned long long)(uintptr_t)function, *value);
    return injected("hipFuncGetAttribute");
}

hipError_t hipModuleLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                 unsigned bz, unsigned shared, void *stream, void **params, void **extra) {
    char args[4096] = "";
    size_t at = 0;
    const char *widths = getenv("FAKE_HIP_ARG_BYTES");
    for (int i = 0; widths != NULL && *widths && at + 80 < sizeof args; i++) {
        int w = atoi(widths);
        at += snprintf(args + at, sizeof args - at, "%s\"", i ? ", " : "");
        for (int b = 0; b < w && b < 16; b++)
            at += snprintf(args + at, sizeof args - at, "%02x", ((const unsigned char *)params[i])[b]);
        at += snprintf(args + at, sizeof args - at, "\"");
        widths = strchr(widths, ',');
        if (widths != NULL) widths++;
    }
    log_line("{\"call\": \"hipModuleLaunchKernel\", \"function\": %llu, \"grid\": [%u, %u, %u], "
             "\"block\": [%u, %u, %u], \"shared\": %u, \"stream\": %llu, \"extra\": %llu, \"args\": [%s]}",
             (unsigned long long)(uintptr_t)f, gx, gy, gz, bx, by, bz, shared,
             (unsigned long long)(uintptr_t)stream, (unsigned long long)(uintptr_t)extra, args);
    return injected("hipModuleLaunchKernel");
}

const char *hipGetErrorName(hipError_t e) {
    switch (e) {
    case 0: return "hipSuccess";
    case 1: return "hipErrorInvalidValue";
    case 98: return "hipErrorInvalidDeviceFunction";
    case 200: return "hipErrorInvalidImage";
    case 209: return "hipErrorNoBinaryForGpu";
    case 500: return "hipErrorNotFound";
    case 701: return "hipErrorLaunchOutOfResources";
    }
    return "hipErrorUnknown";
}

const char *hipGetErrorString(hipError_t e) {
    switch (e) {
    case 500: return "named symbol not found";
    case 701: return "too many resources requested for launch";
    }
    return "fake HIP error";
}
