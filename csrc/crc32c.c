#include "native.h"

/* CRC-32C (Castagnoli), as record batches carry it. With SSE4.2 the CPU's crc32 instruction
 * does it (three streams at once on long inputs); elsewhere a slicing-by-8 table. Here rather than from the crc32c package so a
 * process reading records does not import that package, whose import alone (it reads its
 * own distribution metadata) costs about 5 MB of resident memory. */
static uint32_t crc_table[8][256];

static void
crc_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        crc_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xFF];
}

static uint32_t
crc_soft(uint32_t c, const unsigned char *p, size_t n)
{
    while (n >= 8) {
        uint32_t lo = c ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16
                           | (uint32_t)p[3] << 24);
        c = crc_table[7][lo & 0xFF] ^ crc_table[6][(lo >> 8) & 0xFF]
            ^ crc_table[5][(lo >> 16) & 0xFF] ^ crc_table[4][lo >> 24]
            ^ crc_table[3][p[4]] ^ crc_table[2][p[5]] ^ crc_table[1][p[6]] ^ crc_table[0][p[7]];
        p += 8;
        n -= 8;
    }
    while (n--)
        c = (c >> 8) ^ crc_table[0][(c ^ *p++) & 0xFF];
    return c;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define HAVE_CRC_HW 1

/* The crc32 instruction takes three cycles and can start one a cycle, so one stream of it
 * runs at a third of the CPU's speed. Long inputs go as three interleaved streams over
 * consecutive blocks of SPAN bytes, joined with the operator "append SPAN zero bytes" (a
 * 32x32 matrix over GF(2), applied by table): crc(A || B) = shift(crc(A), |B|) ^ crc0(B). */
#define SPAN 4096
static uint32_t span_shift[4][256];

/* The image of the vector ``v`` under the GF(2) matrix ``m`` (column i is m[i]). */
static uint32_t
gf2_times(const uint32_t *m, uint32_t v)
{
    uint32_t out = 0;
    for (int i = 0; v; i++, v >>= 1)
        if (v & 1)
            out ^= m[i];
    return out;
}

static void
gf2_square(uint32_t *out, const uint32_t *m)
{
    for (int i = 0; i < 32; i++)
        out[i] = gf2_times(m, m[i]);
}

/* span_shift: the operator that appends SPAN zero bytes to a CRC-32C register, as tables of
 * its action on each byte of the register. */
static void
span_init(void)
{
    uint32_t op[32], sq[32], acc[32], tmp[32];
    /* One zero bit: shift right, xor the polynomial in when a one falls out. */
    op[0] = 0x82F63B78u;
    for (int i = 1; i < 32; i++)
        op[i] = 1u << (i - 1);
    gf2_square(sq, op);  /* 2 bits */
    gf2_square(op, sq);  /* 4 bits */
    gf2_square(sq, op);  /* 8 bits: one zero byte */
    /* acc = sq ^ SPAN, by squaring: SPAN is a power of two. */
    memcpy(acc, sq, sizeof acc);
    for (int n = 1; n < SPAN; n <<= 1) {
        gf2_square(tmp, acc);
        memcpy(acc, tmp, sizeof acc);
    }
    for (int k = 0; k < 4; k++)
        for (uint32_t b = 0; b < 256; b++)
            span_shift[k][b] = gf2_times(acc, b << (8 * k));
}

static inline uint32_t
span_apply(uint32_t c)
{
    return span_shift[0][c & 0xFF] ^ span_shift[1][(c >> 8) & 0xFF]
           ^ span_shift[2][(c >> 16) & 0xFF] ^ span_shift[3][c >> 24];
}

__attribute__((target("sse4.2"))) static uint32_t
crc_hw(uint32_t c, const unsigned char *p, size_t n)
{
    uint64_t c0 = c;
    while (n >= 3 * SPAN) {
        uint64_t c1 = 0, c2 = 0;
        for (size_t i = 0; i < SPAN; i += 8) {
            uint64_t v0, v1, v2;
            memcpy(&v0, p + i, 8);
            memcpy(&v1, p + SPAN + i, 8);
            memcpy(&v2, p + 2 * SPAN + i, 8);
            c0 = __builtin_ia32_crc32di(c0, v0);
            c1 = __builtin_ia32_crc32di(c1, v1);
            c2 = __builtin_ia32_crc32di(c2, v2);
        }
        c0 = span_apply((uint32_t)c0) ^ (uint32_t)c1;
        c0 = span_apply((uint32_t)c0) ^ (uint32_t)c2;
        p += 3 * SPAN;
        n -= 3 * SPAN;
    }
    while (n >= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        c0 = __builtin_ia32_crc32di(c0, v);
        p += 8;
        n -= 8;
    }
    c = (uint32_t)c0;
    while (n--)
        c = __builtin_ia32_crc32qi(c, *p++);
    return c;
}
#endif

static uint32_t (*crc_update)(uint32_t, const unsigned char *, size_t) = crc_soft;

typedef uint32_t (*crc_fn)(uint32_t, const unsigned char *, size_t);

uint32_t
gk_crc32c(const unsigned char *p, size_t n)
{
    return crc_update(0xFFFFFFFFu, p, n) ^ 0xFFFFFFFFu;
}

/* The CRC-32C of a bytes-like ``arg`` by ``update``, without the GIL past 64 KiB. */
static PyObject *
crc_of(PyObject *arg, crc_fn update)
{
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    uint32_t c;
    if (view.len > 65536) {
        Py_BEGIN_ALLOW_THREADS
        c = update(0xFFFFFFFFu, view.buf, (size_t)view.len);
        Py_END_ALLOW_THREADS
    }
    else {
        c = update(0xFFFFFFFFu, view.buf, (size_t)view.len);
    }
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(c ^ 0xFFFFFFFFu);
}

PyDoc_STRVAR(crc32c_doc,
"crc32c(data) -> int\n\nThe CRC-32C of ``data`` (any bytes-like object).");

static PyObject *
crc32c(PyObject *module, PyObject *arg)
{
    return crc_of(arg, crc_update);
}

PyDoc_STRVAR(crc32c_table_doc,
"crc32c_table(data) -> int\n\ncrc32c() by the table, whatever the CPU has (for tests).");

static PyObject *
crc32c_table(PyObject *module, PyObject *arg)
{
    return crc_of(arg, crc_soft);
}

static PyMethodDef crc32c_methods[] = {
    {"crc32c", crc32c, METH_O, crc32c_doc},
    {"crc32c_table", crc32c_table, METH_O, crc32c_table_doc},
    {NULL, NULL, 0, NULL},
};

int
gk_crc32c_init(PyObject *module)
{
    crc_init();
#ifdef HAVE_CRC_HW
    if (__builtin_cpu_supports("sse4.2")) {
        span_init();
        crc_update = crc_hw;
    }
#endif
    return PyModule_AddFunctions(module, crc32c_methods);
}
