/* The per-cell and per-record steps of reading the metadata table, compiled.
 *
 * The one sequential step of reading an HFile data block: where each cell
 * starts. A cell's length is in its header (int32 key length, int32 value
 * length, both big-endian), so the cells are walked one after the other; in
 * Python that walk cost 150 ns a cell, here a few, so the threads that
 * inflate blocks walk them too (a block's walk keeps the GIL: SHORT_CALL_BYTES).
 *
 * walk_cells(payload, fixed_tail) -> bytes | None: the start of every cell
 * as native int64s, assuming each cell ends `fixed_tail` bytes after its
 * value; None when the block does not walk that way. The same contract as
 * the Python `hfile_cells.walk_cells`, which stays the reference.
 *
 * gather_spans copies byte spans (keys, file names) into an Arrow binary
 * array's buffers in one pass, where numpy and Arrow took several. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

static int32_t be_int32(const unsigned char *p) {
    return (int32_t)(((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3]);
}

/* Cells found, or -1 when the block does not walk with this tail. `cells`
 * has room for two int64s per 10 bytes (a cell takes at least 8 + 2 bytes):
 * each cell's start, then where its value starts. */
static Py_ssize_t walk(const unsigned char *data, Py_ssize_t size, Py_ssize_t fixed_tail, int64_t *cells) {
    Py_ssize_t count = 0;
    int64_t pos = 0;
    const int64_t end = (int64_t)size - 8;
    while (pos <= end) {
        int32_t key_length = be_int32(data + pos);
        int32_t value_length = be_int32(data + pos + 4);
        if (key_length < 2 || value_length < 0)
            return -1;
        cells[2 * count] = pos;
        cells[2 * count + 1] = pos + 8 + (int64_t)key_length;
        count++;
        pos += (int64_t)key_length + (int64_t)value_length + 8 + fixed_tail;
    }
    return pos == (int64_t)size ? count : -1;
}

/* Below this many bytes a call keeps the GIL: a block's walk or checksums
 * take a microsecond or two, while taking the GIL back from a busy thread can
 * take up to Python's switch interval (5 ms). The inflating threads made two
 * such hand-offs a block, 7,000 blocks a 1M-file plan: holding the GIL there
 * made the plan 0.955x (10 alternating cold plans, 8 faster). */
#define SHORT_CALL_BYTES (1 << 20)

static PyObject *walk_cells(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer payload;
    Py_ssize_t fixed_tail;
    if (!PyArg_ParseTuple(args, "y*n", &payload, &fixed_tail))
        return NULL;
    if (fixed_tail < 0) {
        PyBuffer_Release(&payload);
        PyErr_SetString(PyExc_ValueError, "fixed_tail must not be negative");
        return NULL;
    }
    Py_ssize_t room = 2 * (payload.len / 10 + 1);
    int64_t *cells = PyMem_RawMalloc((size_t)room * sizeof(int64_t));
    if (cells == NULL) {
        PyBuffer_Release(&payload);
        return PyErr_NoMemory();
    }
    PyThreadState *saved = payload.len < SHORT_CALL_BYTES ? NULL : PyEval_SaveThread();
    Py_ssize_t count = walk((const unsigned char *)payload.buf, payload.len, fixed_tail, cells);
    if (saved != NULL) PyEval_RestoreThread(saved);
    PyBuffer_Release(&payload);
    PyObject *result;
    if (count < 0) {
        result = Py_NewRef(Py_None);
    } else {
        result = PyBytes_FromStringAndSize((const char *)cells, 2 * count * (Py_ssize_t)sizeof(int64_t));
    }
    PyMem_RawFree(cells);
    return result;
}

/* ---------------------------------------------------------------------------
 * crc32c_chunks(data, bytes_per_checksum) -> bytes | None
 *
 * The CRC32C of each `bytes_per_checksum` bytes of a block, big-endian, end
 * to end (HBase's checksums after a block's data), by the CPU's crc32
 * instruction (the GIL let go above SHORT_CALL_BYTES); None where there is no such instruction
 * (the caller sums them with google_crc32c, a chunk at a time under the GIL:
 * on the inflating threads that held the GIL for about a twentieth of a cold
 * plan's time). */

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define HAVE_CRC32C_INSTRUCTION 1
__attribute__((target("sse4.2"))) static uint32_t crc32c_of(const unsigned char *p, size_t n) {
    uint64_t crc = 0xFFFFFFFFu;
    for (; n >= 8; p += 8, n -= 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        crc = __builtin_ia32_crc32di(crc, word);
    }
    uint32_t c = (uint32_t)crc;
    for (; n > 0; p++, n--) c = __builtin_ia32_crc32qi(c, *p);
    return c ^ 0xFFFFFFFFu;
}

/* The CRC32C of chunk `i` of a block's `size` bytes cut every `per` bytes (the last chunk shorter). */
static uint32_t chunk_crc32c(const unsigned char *data, int64_t size, int64_t per, int64_t i) {
    const int64_t start = i * per;
    return crc32c_of(data + start, (size_t)(size - start < per ? size - start : per));
}
#endif

static PyObject *crc32c_chunks(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer data;
    Py_ssize_t per;
    if (!PyArg_ParseTuple(args, "y*n", &data, &per))
        return NULL;
    if (per <= 0) {
        PyBuffer_Release(&data);
        PyErr_SetString(PyExc_ValueError, "bytes_per_checksum must be positive");
        return NULL;
    }
#ifdef HAVE_CRC32C_INSTRUCTION
    if (__builtin_cpu_supports("sse4.2")) {
        const Py_ssize_t count = (data.len + per - 1) / per;
        PyObject *out = PyBytes_FromStringAndSize(NULL, 4 * count);
        if (out != NULL) {
            unsigned char *at = (unsigned char *)PyBytes_AS_STRING(out);
            const unsigned char *buf = data.buf;
            PyThreadState *saved = data.len < SHORT_CALL_BYTES ? NULL : PyEval_SaveThread();
            for (Py_ssize_t i = 0; i < count; i++) {
                const uint32_t crc = chunk_crc32c(buf, data.len, per, i);
                at[4 * i] = (unsigned char)(crc >> 24);
                at[4 * i + 1] = (unsigned char)(crc >> 16);
                at[4 * i + 2] = (unsigned char)(crc >> 8);
                at[4 * i + 3] = (unsigned char)crc;
            }
            if (saved != NULL) PyEval_RestoreThread(saved);
        }
        PyBuffer_Release(&data);
        return out;
    }
#endif
    PyBuffer_Release(&data);
    Py_RETURN_NONE;
}

/* ---------------------------------------------------------------------------
 * use_inflater(alloc, free, gzip_decompress_ex): the addresses of libdeflate's
 * decompressor functions (the `deflate` package's library exports them);
 * inflate_blocks(span, starts, sizes, codec, fixed_tail) -> list | None
 *
 * The data blocks lying end to end in `span` (each at `starts[i]`, `sizes[i]`
 * bytes on disk, header first) checked against their CRC32C checksums,
 * inflated (codec 1, gzip; 0: stored) and walked (`walk`; fixed_tail < 0: not
 * walked), with the GIL let go once for them all: a (payload, walk or None)
 * pair per block. In Python each block took the GIL back three times (after
 * its read, its inflate and its walk), 7,000 blocks a 1M-file plan, while
 * the plan's threads held it. None when any block is not plain (another
 * magic, sizes that disagree, CRC32 checksums, a checksum or an inflate that
 * fails, a second gzip member): the reader then reads the blocks its own
 * way, which refuses a damaged one naming it. */

typedef void *(*AllocDecompressor)(void);
typedef void (*FreeDecompressor)(void *);
typedef int (*GzipDecompressEx)(void *, const void *, size_t, void *, size_t, size_t *, size_t *);
static AllocDecompressor alloc_decompressor = NULL;
static FreeDecompressor free_decompressor = NULL;
static GzipDecompressEx gzip_decompress_ex = NULL;

static PyObject *use_inflater(PyObject *self, PyObject *args) {
    (void)self;
    unsigned long long alloc, release, decompress;
    if (!PyArg_ParseTuple(args, "KKK", &alloc, &release, &decompress))
        return NULL;
    if (!alloc || !release || !decompress) {
        PyErr_SetString(PyExc_ValueError, "an inflater function's address is missing");
        return NULL;
    }
    alloc_decompressor = (AllocDecompressor)(uintptr_t)alloc;
    free_decompressor = (FreeDecompressor)(uintptr_t)release;
    gzip_decompress_ex = (GzipDecompressEx)(uintptr_t)decompress;
    Py_RETURN_NONE;
}

#define BLOCK_HEADER_SIZE 33
#define CHECKSUM_NONE_TYPE 0
#define CHECKSUM_CRC32C_TYPE 2

typedef struct {
    const unsigned char *block;
    Py_ssize_t size;                 /* on disk, header included */
    int32_t data_size;               /* header and compressed data, before the checksums */
    int32_t bytes_per_checksum;
    int checksum_type;
    char *payload;                   /* the payload's bytes object's buffer */
    Py_ssize_t payload_size;
    int64_t *cells;                  /* the walk, two int64s per cell */
    Py_ssize_t cell_count;
} PlainBlock;

/* A larger block is not plain: the Python reader then refuses it, or reads it under a cap the user raised. */
#define MAX_PLAIN_PAYLOAD (256 * 1024 * 1024)

/* A block's header read into `b`: 0 when the block is plain enough for inflate_blocks. */
static int plain_header(PlainBlock *b) {
    const unsigned char *h = b->block;
    if (b->size < BLOCK_HEADER_SIZE || memcmp(h, "DATABLK*", 8) != 0) return -1;
    const int32_t on_disk_without_header = be_int32(h + 8);
    const int32_t uncompressed = be_int32(h + 12);
    b->checksum_type = (int)(signed char)h[24];
    b->bytes_per_checksum = be_int32(h + 25);
    b->data_size = be_int32(h + 29);
    if ((int64_t)BLOCK_HEADER_SIZE + on_disk_without_header != (int64_t)b->size || uncompressed < 0 || uncompressed > MAX_PLAIN_PAYLOAD) return -1;
    if (b->data_size < BLOCK_HEADER_SIZE || b->data_size - BLOCK_HEADER_SIZE > on_disk_without_header) return -1;
    if (b->checksum_type != CHECKSUM_NONE_TYPE) {
        if (b->checksum_type != CHECKSUM_CRC32C_TYPE || b->bytes_per_checksum <= 0) return -1;
        const int64_t sums = ((int64_t)b->data_size + b->bytes_per_checksum - 1) / b->bytes_per_checksum;
        if ((int64_t)b->data_size + 4 * sums > (int64_t)b->size) return -1;
    }
    b->payload_size = uncompressed;
    return 0;
}

/* Checked, inflated and walked, without the GIL: 0 when all went as plain blocks go. */
static int inflate_plain(PlainBlock *b, void *decompressor, int codec, Py_ssize_t fixed_tail, int64_t *scratch) {
#ifdef HAVE_CRC32C_INSTRUCTION
    if (b->checksum_type == CHECKSUM_CRC32C_TYPE) {
        const unsigned char *sums = b->block + b->data_size;
        for (int64_t i = 0; i * b->bytes_per_checksum < b->data_size; i++)
            if (chunk_crc32c(b->block, b->data_size, b->bytes_per_checksum, i) != (uint32_t)be_int32(sums + 4 * i)) return -1;
    }
#else
    if (b->checksum_type != CHECKSUM_NONE_TYPE) return -1;
#endif
    const unsigned char *data = b->block + BLOCK_HEADER_SIZE;
    const size_t data_size = (size_t)(b->data_size - BLOCK_HEADER_SIZE);
    if (codec == 0) {
        if ((Py_ssize_t)data_size != b->payload_size) return -1;
        memcpy(b->payload, data, data_size);
    } else {
        size_t read = 0, written = 0;
        if (gzip_decompress_ex(decompressor, data, data_size, b->payload, (size_t)b->payload_size, &read, &written) != 0 ||
            read != data_size || (Py_ssize_t)written != b->payload_size)
            return -1;
    }
    if (fixed_tail < 0) return 0;
    /* walked into the scratch room, then kept at its size: a long-lived room per block left holes between the payloads */
    b->cell_count = walk((const unsigned char *)b->payload, b->payload_size, fixed_tail, scratch);
    if (b->cell_count <= 0) return 0;
    b->cells = PyMem_RawMalloc((size_t)(2 * b->cell_count) * sizeof(int64_t));
    if (b->cells == NULL) return -1;
    memcpy(b->cells, scratch, (size_t)(2 * b->cell_count) * sizeof(int64_t));
    return 0;
}

static PyObject *inflate_blocks(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer span, starts, sizes;
    int codec;
    Py_ssize_t fixed_tail;
    if (!PyArg_ParseTuple(args, "y*y*y*in", &span, &starts, &sizes, &codec, &fixed_tail))
        return NULL;
    PyObject *result = NULL, **payloads = NULL;
    PlainBlock *blocks = NULL;
    void *decompressor = NULL;
    int64_t *scratch = NULL; /* room for the largest block's walk */
    Py_ssize_t largest = 0;
    const Py_ssize_t count = starts.len / (Py_ssize_t)sizeof(int64_t);
    int plain = sizes.len == starts.len && (codec == 0 || (codec == 1 && gzip_decompress_ex != NULL));
#ifdef HAVE_CRC32C_INSTRUCTION
    plain = plain && __builtin_cpu_supports("sse4.2"); /* crc32c_of needs it */
#endif
    if (plain) {
        blocks = PyMem_Calloc((size_t)(count ? count : 1), sizeof(PlainBlock));
        payloads = PyMem_Calloc((size_t)(count ? count : 1), sizeof(PyObject *));
        if (blocks == NULL || payloads == NULL) {
            PyErr_NoMemory();
            goto done;
        }
    }
    for (Py_ssize_t i = 0; plain && i < count; i++) {
        const int64_t start = ((const int64_t *)starts.buf)[i], size = ((const int64_t *)sizes.buf)[i];
        if (start < 0 || size < 0 || start + size > span.len) {
            plain = 0;
            break;
        }
        blocks[i].block = (const unsigned char *)span.buf + start;
        blocks[i].size = (Py_ssize_t)size;
        if (plain_header(&blocks[i]) != 0) {
            plain = 0;
            break;
        }
        payloads[i] = PyBytes_FromStringAndSize(NULL, blocks[i].payload_size);
        if (payloads[i] == NULL) goto done;
        blocks[i].payload = PyBytes_AS_STRING(payloads[i]);
        if (blocks[i].payload_size > largest) largest = blocks[i].payload_size;
    }
    if (plain && fixed_tail >= 0) {
        scratch = PyMem_RawMalloc((size_t)(2 * (largest / 10 + 1)) * sizeof(int64_t));
        if (scratch == NULL) {
            PyErr_NoMemory();
            goto done;
        }
    }
    if (plain && codec == 1) {
        decompressor = alloc_decompressor();
        if (decompressor == NULL) {
            PyErr_NoMemory();
            goto done;
        }
    }
    if (plain) {
        PyThreadState *saved = PyEval_SaveThread();
        for (Py_ssize_t i = 0; plain && i < count; i++) plain = inflate_plain(&blocks[i], decompressor, codec, fixed_tail, scratch) == 0;
        PyEval_RestoreThread(saved);
    }
    if (!plain) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    result = PyList_New(count);
    for (Py_ssize_t i = 0; result != NULL && i < count; i++) {
        PyObject *walked = fixed_tail < 0 || blocks[i].cell_count < 0
                               ? Py_NewRef(Py_None)
                               : PyBytes_FromStringAndSize(blocks[i].cell_count ? (const char *)blocks[i].cells : "",
                                                           2 * blocks[i].cell_count * (Py_ssize_t)sizeof(int64_t));
        PyObject *pair = walked == NULL ? NULL : PyTuple_Pack(2, payloads[i], walked);
        Py_XDECREF(walked);
        if (pair == NULL) {
            Py_CLEAR(result);
            break;
        }
        PyList_SET_ITEM(result, i, pair);
    }
done:
    if (decompressor != NULL) free_decompressor(decompressor);
    PyMem_RawFree(scratch);
    for (Py_ssize_t i = 0; blocks != NULL && i < count; i++) PyMem_RawFree(blocks[i].cells);
    for (Py_ssize_t i = 0; payloads != NULL && i < count; i++) Py_XDECREF(payloads[i]);
    PyMem_Free(blocks);
    PyMem_Free(payloads);
    PyBuffer_Release(&span);
    PyBuffer_Release(&starts);
    PyBuffer_Release(&sizes);
    return result;
}

/* ---------------------------------------------------------------------------
 * lay_out(payloads, walks, fixed_tail, padding) -> (bytes, bytes) | None
 *
 * Walked blocks (`walk_cells`' pairs per block) laid end to end as one chunk:
 * the blocks copied into one buffer followed by `padding` zero bytes, and per
 * cell its row's start and length, its value's start and length (four int64
 * columns one after the other), in one pass a block at a time while the block
 * is in the cache; the numpy layout (`hfile_cells.lay_out_blocks`) took a
 * dozen passes over every cell. None when a cell's tail byte is not a
 * one-byte MVCC vint or its row does not fit its key: the numpy layout then
 * decides (walked exactly, or refused naming the cell). */

static PyObject *lay_out(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *payloads, *walks;
    Py_ssize_t fixed_tail, padding;
    if (!PyArg_ParseTuple(args, "O!O!nn", &PyList_Type, &payloads, &PyList_Type, &walks, &fixed_tail, &padding))
        return NULL;
    Py_ssize_t blocks = PyList_GET_SIZE(payloads);
    if (PyList_GET_SIZE(walks) != blocks || fixed_tail < 0 || fixed_tail > 1 || padding < 0) {
        PyErr_SetString(PyExc_ValueError, "lay_out: a walk per block, a tail of 0 or 1 byte, padding not negative");
        return NULL;
    }
    Py_buffer *views = PyMem_Calloc((size_t)(2 * blocks + 1), sizeof(Py_buffer));
    if (views == NULL) return PyErr_NoMemory();
    Py_ssize_t held = 0, total = 0, cells = 0;
    PyObject *joined = NULL, *layout = NULL, *result = NULL;
    for (Py_ssize_t b = 0; b < blocks; b++) {
        if (PyObject_GetBuffer(PyList_GET_ITEM(payloads, b), &views[held], PyBUF_SIMPLE) < 0) goto done;
        total += views[held++].len;
        if (PyObject_GetBuffer(PyList_GET_ITEM(walks, b), &views[held], PyBUF_SIMPLE) < 0) goto done;
        if (views[held].len % (Py_ssize_t)(2 * sizeof(int64_t)) != 0) {
            held++;
            PyErr_SetString(PyExc_ValueError, "lay_out: a walk is not int64 pairs");
            goto done;
        }
        cells += views[held++].len / (Py_ssize_t)(2 * sizeof(int64_t));
    }
    joined = PyBytes_FromStringAndSize(NULL, total + padding);
    layout = PyBytes_FromStringAndSize(NULL, 4 * cells * (Py_ssize_t)sizeof(int64_t));
    if (joined == NULL || layout == NULL) goto done;
    unsigned char *out = (unsigned char *)PyBytes_AS_STRING(joined);
    int64_t *row_start = (int64_t *)PyBytes_AS_STRING(layout);
    int64_t *row_length = row_start + cells, *value_start = row_length + cells, *value_length = value_start + cells;
    int fits = 1;
    Py_BEGIN_ALLOW_THREADS
    int64_t shift = 0;
    Py_ssize_t n = 0;
    for (Py_ssize_t b = 0; b < blocks && fits; b++) {
        const unsigned char *data = views[2 * b].buf;
        const int64_t size = views[2 * b].len;
        const int64_t *pairs = views[2 * b + 1].buf;
        const Py_ssize_t count = views[2 * b + 1].len / (Py_ssize_t)(2 * sizeof(int64_t));
        memcpy(out + shift, data, (size_t)size);
        for (Py_ssize_t c = 0; c < count; c++, n++) {
            const int64_t start = pairs[2 * c], value = pairs[2 * c + 1];
            const int64_t end = c + 1 < count ? pairs[2 * c + 2] : size; /* a block's last cell ends with the block */
            if (start < 0 || value < start + 10 || end < value + fixed_tail || end > size) { fits = 0; break; }
            if (fixed_tail) {
                const unsigned char last = data[end - 1];
                if (last >= 0x80 && last < 0x90) { fits = 0; break; } /* the first byte of a longer vint */
            }
            const int64_t length = (int64_t)(int16_t)(((uint16_t)data[start + 8] << 8) | data[start + 9]);
            if (length < 0 || length + 2 > value - start - 8) { fits = 0; break; }
            row_start[n] = shift + start + 10;
            row_length[n] = length;
            value_start[n] = shift + value;
            value_length[n] = end - fixed_tail - value;
        }
        shift += size;
    }
    memset(out + total, 0, (size_t)padding);
    Py_END_ALLOW_THREADS
    result = fits ? PyTuple_Pack(2, joined, layout) : Py_NewRef(Py_None);
done:
    for (Py_ssize_t v = 0; v < held; v++) PyBuffer_Release(&views[v]);
    PyMem_Free(views);
    Py_XDECREF(joined);
    Py_XDECREF(layout);
    return result;
}

/* ---------------------------------------------------------------------------
 * decode_records(buffer, starts, lengths, program, kinds, names, release=False)
 *
 * Avro records decoded one after the other, each field appended to its path's
 * columns: the results `columnar._Decoder` makes a field at a time with numpy
 * (which stays the reference), at a few nanoseconds a field. `program` is the
 * writer schema compiled by `columnar` into int64 nodes (OP_* below, a node's
 * children are indexes of other nodes), laid out flat once a call (`flatten`,
 * F_* below); `kinds` says per path what it holds
 * (KIND_*; KIND_SKIP: decoded, not kept); `names` names the paths for errors;
 * `release` lets the GIL go while decoding. Entries of maps and arrays
 * are numbered record by record. Returns (per path: None, or a tuple of
 * int64 buffers: rows (None when they are 0, 1, 2, ...), values[, lengths]),
 * (per path: entries counted; -1 for a path that is not a map's or array's
 * space, or one never reached)); None when a map or
 * array claims more entries than its record has bytes, or the program does
 * not lay out flat (left to the numpy decoder); ValueError for bytes that do
 * not decode. */

enum { OP_NULL, OP_LONG, OP_BOOL, OP_FLOAT, OP_DOUBLE, OP_SPAN, OP_FIXED, OP_RECORD, OP_UNION, OP_ENTRIES };
enum { KIND_INTS, KIND_BOOLS, KIND_FLOATS, KIND_SPAN, KIND_OWNER, KIND_SKIP };
enum { OK, ERR_VARINT_PAST, ERR_VARINT_LONG, ERR_SPAN_PAST, ERR_FIXED_PAST, ERR_BRANCH, ERR_END, ERR_MEMORY, ERR_ENTRIES, ERR_PROGRAM, ERR_FLAT };

typedef struct {
    int64_t *rows; /* NULL while the rows are 0, 1, 2, ... (most paths: every record has them) */
    int64_t *values; /* ints, owners, span starts, or doubles and bools stored in the same 8 bytes */
    int64_t *lengths; /* spans only */
    Py_ssize_t size, room, rows_room;
    int64_t entries; /* owner paths: entries numbered so far; -1 until the map or array is reached */
} Column;

typedef struct {
    const unsigned char *buf;
    int64_t pos, end;
    const int64_t *program;
    Py_ssize_t program_size;
    const int64_t *kinds;
    Column *columns;
    Py_ssize_t paths;
    Py_ssize_t first_room; /* a column's first allocation: one value per record (most paths have one), grown past it */
    int error;
    int64_t error_path, error_record, error_at;
} Decoder;

static int grow(int64_t **values, Py_ssize_t room) {
    int64_t *grown = PyMem_RawRealloc(*values, (size_t)room * sizeof(int64_t));
    if (grown == NULL) return ERR_MEMORY;
    *values = grown;
    return OK;
}

static inline int push(Decoder *d, int64_t path, int64_t row, int64_t value, int64_t length) {
    if (d->kinds[path] == KIND_SKIP) return OK; /* decoded, but not read by the caller */
    Column *c = &d->columns[path];
    if (c->size == c->room) {
        Py_ssize_t room = c->room ? c->room * 2 : d->first_room;
        if (grow(&c->values, room) || (d->kinds[path] == KIND_SPAN && grow(&c->lengths, room))) return d->error = ERR_MEMORY;
        c->room = room;
    }
    if (c->rows != NULL || row != (int64_t)c->size) { /* rows kept once they stop being 0, 1, 2, ... */
        if (c->rows_room <= c->size) {
            if (grow(&c->rows, c->room)) return d->error = ERR_MEMORY;
            if (c->rows_room == 0)
                for (Py_ssize_t i = 0; i < c->size; i++) c->rows[i] = (int64_t)i;
            c->rows_room = c->room;
        }
        c->rows[c->size] = row;
    }
    c->values[c->size] = value;
    if (d->kinds[path] == KIND_SPAN) c->lengths[c->size] = length;
    c->size++;
    return OK;
}

static inline int varint(Decoder *d, int64_t *out) {
    if (d->pos < d->end && d->buf[d->pos] < 0x80) { /* one byte: most lengths, branches and counts */
        uint64_t raw = d->buf[d->pos++];
        *out = (int64_t)(raw >> 1) ^ -(int64_t)(raw & 1);
        return OK;
    }
    uint64_t raw = 0;
    for (int shift = 0;; shift += 7) {
        if (shift > 63) return d->error = ERR_VARINT_LONG;
        if (d->pos >= d->end) return d->error = ERR_VARINT_PAST;
        unsigned char byte = d->buf[d->pos++];
        raw |= (uint64_t)(byte & 0x7F) << shift;
        if (byte < 0x80) break;
    }
    *out = (int64_t)(raw >> 1) ^ -(int64_t)(raw & 1);
    return OK;
}

/* The leaf values, read and stepped over; the tree walk and the flat code push what they read. */
static inline int read_span(Decoder *d, int64_t *start, int64_t *length) {
    if (varint(d, length)) return d->error;
    if (*length < 0 || *length > d->end - d->pos) return d->error = ERR_SPAN_PAST;
    *start = d->pos;
    d->pos += *length;
    return OK;
}

static inline int read_fixed(Decoder *d, int64_t size, int64_t *start) {
    if (size > d->end - d->pos) return d->error = ERR_FIXED_PAST;
    *start = d->pos;
    d->pos += size;
    return OK;
}

static inline int read_bool(Decoder *d, int64_t *value) {
    if (d->pos + 1 > d->end) return d->error = ERR_FIXED_PAST;
    *value = d->buf[d->pos++] != 0;
    return OK;
}

static inline int read_float(Decoder *d, int64_t *value) { /* widened to a double, kept in the int64's 8 bytes */
    if (d->pos + 4 > d->end) return d->error = ERR_FIXED_PAST;
    float single;
    memcpy(&single, d->buf + d->pos, 4); /* Avro floats are little-endian, as this machine (checked at import) */
    d->pos += 4;
    double widened = (double)single;
    memcpy(value, &widened, 8);
    return OK;
}

static inline int read_double(Decoder *d, int64_t *value) {
    if (d->pos + 8 > d->end) return d->error = ERR_FIXED_PAST;
    memcpy(value, d->buf + d->pos, 8);
    d->pos += 8;
    return OK;
}

static inline int span(Decoder *d, int64_t path, int64_t row) {
    int64_t start, length;
    return read_span(d, &start, &length) || push(d, path, row, start, length) ? d->error : OK;
}

static int node(Decoder *d, int64_t at, int64_t row) {
    if (at < 0 || at >= d->program_size) return d->error = ERR_PROGRAM;
    const int64_t *n = d->program + at;
    int64_t value;
    switch (n[0]) {
    case OP_NULL:
        return OK;
    case OP_LONG:
        if (varint(d, &value)) return d->error;
        return push(d, n[1], row, value, 0);
    case OP_BOOL:
        return read_bool(d, &value) || push(d, n[1], row, value, 0) ? d->error : OK;
    case OP_FLOAT:
        return read_float(d, &value) || push(d, n[1], row, value, 0) ? d->error : OK;
    case OP_DOUBLE:
        return read_double(d, &value) || push(d, n[1], row, value, 0) ? d->error : OK;
    case OP_SPAN:
        return span(d, n[1], row);
    case OP_FIXED:
        return read_fixed(d, n[2], &value) || push(d, n[1], row, value, n[2]) ? d->error : OK;
    case OP_RECORD:
        for (int64_t i = 0; i < n[1]; i++)
            if (node(d, n[2 + i], row)) return d->error;
        return OK;
    case OP_UNION:
        if (varint(d, &value)) return d->error;
        if (value < 0 || value >= n[2]) {
            d->error_path = n[1];
            return d->error = ERR_BRANCH;
        }
        if (push(d, n[1], row, value, 0)) return d->error;
        return node(d, n[3 + value], row);
    case OP_ENTRIES: { /* owner path, keyed, key path, item */
        Column *space = &d->columns[n[1]];
        if (space->entries < 0) space->entries = 0;
        for (;;) {
            int64_t count;
            if (varint(d, &count)) return d->error;
            if (count == 0) return OK;
            if (count < 0) { /* a negative count is followed by the block's byte size */
                if (count == INT64_MIN) return d->error = ERR_ENTRIES; /* no positive count: left to the numpy decoder */
                int64_t block_bytes;
                if (varint(d, &block_bytes)) return d->error;
                count = -count;
            }
            if (count > d->end - d->pos) return d->error = ERR_ENTRIES; /* more entries than bytes: left to the numpy decoder */
            for (int64_t j = 0; j < count; j++) {
                int64_t entry = space->entries++;
                if (push(d, n[1], entry, row, 0)) return d->error;
                if (n[2] && span(d, n[3], entry)) return d->error;
                if (node(d, n[4], entry)) return d->error;
            }
        }
    }
    default:
        return d->error = ERR_PROGRAM;
    }
}

/* A decoded column handed to Python without a copy: the buffer protocol over
 * memory the decoder allocated, freed with the last view of it. */
typedef struct {
    PyObject_HEAD
    int64_t *data;
    Py_ssize_t size;
} Owned;

static void owned_dealloc(Owned *self) {
    PyMem_RawFree(self->data);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int owned_getbuffer(Owned *self, Py_buffer *view, int flags) {
    return PyBuffer_FillInfo(view, (PyObject *)self, self->data, self->size * (Py_ssize_t)sizeof(int64_t), 0, flags);
}

static PyBufferProcs owned_buffer = {(getbufferproc)owned_getbuffer, NULL};

static PyTypeObject OwnedType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "metadata.mdt._cells.Owned",
    .tp_basicsize = sizeof(Owned),
    .tp_dealloc = (destructor)owned_dealloc,
    .tp_as_buffer = &owned_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "int64s the compiled decoder made, as a buffer",
};

/* The column's values as an Owned (None when `*values` is NULL); the decoder lets go of them. */
static PyObject *hand_over(int64_t **values, Py_ssize_t size) {
    if (*values == NULL) return Py_NewRef(Py_None);
    Owned *owned = PyObject_New(Owned, &OwnedType);
    if (owned == NULL) return NULL;
    owned->data = *values;
    owned->size = size;
    *values = NULL;
    return (PyObject *)owned;
}

static PyObject *decode_error(Decoder *d, PyObject *names) {
    switch (d->error) {
    case ERR_VARINT_PAST: return PyErr_Format(PyExc_ValueError, "a varint runs past its record");
    case ERR_VARINT_LONG: return PyErr_Format(PyExc_ValueError, "a varint is longer than 10 bytes");
    case ERR_SPAN_PAST: return PyErr_Format(PyExc_ValueError, "a string or bytes value runs past its record");
    case ERR_FIXED_PAST: return PyErr_Format(PyExc_ValueError, "a fixed-size value runs past its record");
    case ERR_BRANCH: {
        PyObject *name = PyTuple_GetItem(names, (Py_ssize_t)d->error_path);
        if (name == NULL) return NULL;
        return PyErr_Format(PyExc_ValueError, "%U: union branch out of range", name);
    }
    case ERR_END:
        return PyErr_Format(PyExc_ValueError, "record %lld does not end where its value ends (%lld vs %lld)", (long long)d->error_record,
                            (long long)d->error_at, (long long)d->end);
    case ERR_MEMORY: return PyErr_NoMemory();
    default: return PyErr_Format(PyExc_ValueError, "the compiled record program is malformed");
    }
}

/* The tree program laid out flat once a call: a record's fields one after
 * the other, a union's branches reached by a jump table, paths the caller
 * does not read stepped over without a push. A record then decodes in one
 * loop, without a call per node: 90 ns a column_stats record against 130 ns
 * for the tree walk (a 1M plan 0.964x, 0.1 s less CPU). Computed gotos
 * (GCC's labels as values) took 75 ns; the switch stays, portable. Maps and
 * arrays stay tree walks (`node`), called from the flat code. */
enum { F_END, F_LONG, F_SKIP_LONG, F_BOOL, F_FLOAT, F_DOUBLE, F_SPAN, F_SKIP_SPAN, F_FIXED, F_SKIP_FIXED, F_UNION, F_SKIP_UNION,
       F_JUMP, F_TREE };

typedef struct {
    int64_t *code;
    Py_ssize_t size, room;
} Flat;

#define FLAT_DEPTH 64 /* nested records and unions: far more than a metadata-table schema has */

static int emit(Flat *f, int64_t value) {
    if (f->size >= f->room) return ERR_PROGRAM;
    f->code[f->size++] = value;
    return OK;
}

/* Node `at` laid out at the end of `f`; checks every index it reads. */
static int flatten(const Decoder *d, Flat *f, int64_t at, int depth) {
    if (depth > FLAT_DEPTH || at < 0 || at >= d->program_size) return ERR_PROGRAM;
    const int64_t *n = d->program + at;
    int64_t operands = d->program_size - at - 1; /* readable after the opcode */
    if (n[0] == OP_NULL) return OK;
    if (n[0] == OP_RECORD) {
        if (operands < 1 || n[1] < 0 || n[1] > operands - 1) return ERR_PROGRAM;
        for (int64_t i = 0; i < n[1]; i++)
            if (flatten(d, f, n[2 + i], depth + 1)) return ERR_PROGRAM;
        return OK;
    }
    if (n[0] == OP_ENTRIES) /* a map's or array's entries: walked as a tree, which numbers them */
        return emit(f, F_TREE) || emit(f, at);
    if (operands < 1 || n[1] < 0 || n[1] >= d->paths) return ERR_PROGRAM;
    int64_t path = n[1];
    int skip = d->kinds[path] == KIND_SKIP;
    switch (n[0]) {
    case OP_LONG: return skip ? emit(f, F_SKIP_LONG) : emit(f, F_LONG) || emit(f, path);
    case OP_BOOL: return emit(f, skip ? F_SKIP_FIXED : F_BOOL) || emit(f, skip ? 1 : path);
    case OP_FLOAT: return emit(f, skip ? F_SKIP_FIXED : F_FLOAT) || emit(f, skip ? 4 : path);
    case OP_DOUBLE: return emit(f, skip ? F_SKIP_FIXED : F_DOUBLE) || emit(f, skip ? 8 : path);
    case OP_SPAN: return skip ? emit(f, F_SKIP_SPAN) : emit(f, F_SPAN) || emit(f, path);
    case OP_FIXED:
        if (operands < 2 || n[2] < 0) return ERR_PROGRAM;
        return skip ? emit(f, F_SKIP_FIXED) || emit(f, n[2]) : emit(f, F_FIXED) || emit(f, path) || emit(f, n[2]);
    case OP_UNION: {
        if (operands < 2 || n[2] < 0 || n[2] > operands - 2) return ERR_PROGRAM;
        int64_t count = n[2];
        if (emit(f, skip ? F_SKIP_UNION : F_UNION) || emit(f, path) || emit(f, count)) return ERR_PROGRAM;
        Py_ssize_t table = f->size;
        for (int64_t b = 0; b < count; b++)
            if (emit(f, -1)) return ERR_PROGRAM; /* -1: the branch is null, it goes on after the union */
        int64_t jumps = -1; /* the branches' jumps past the union, chained through their operands until known */
        for (int64_t b = 0; b < count; b++) {
            int64_t child = n[3 + b];
            if (child < 0 || child >= d->program_size) return ERR_PROGRAM;
            if (d->program[child] == OP_NULL) continue;
            f->code[table + b] = (int64_t)f->size;
            if (flatten(d, f, child, depth + 1) || emit(f, F_JUMP) || emit(f, jumps)) return ERR_PROGRAM;
            jumps = (int64_t)f->size - 1;
        }
        int64_t after = (int64_t)f->size;
        for (int64_t b = 0; b < count; b++)
            if (f->code[table + b] < 0) f->code[table + b] = after;
        while (jumps >= 0) {
            int64_t next = f->code[jumps];
            f->code[jumps] = after;
            jumps = next;
        }
        return OK;
    }
    default:
        return ERR_PROGRAM;
    }
}

/* One record by the flat code. */
static int run_flat(Decoder *d, const int64_t *code, int64_t row) {
    Py_ssize_t pc = 0;
    int64_t value;
    for (;;) {
        const int64_t *c = code + pc;
        switch (c[0]) {
        case F_END:
            return OK;
        case F_LONG:
            if (varint(d, &value) || push(d, c[1], row, value, 0)) return d->error;
            pc += 2;
            break;
        case F_SKIP_LONG:
            if (varint(d, &value)) return d->error;
            pc += 1;
            break;
        case F_BOOL:
            if (read_bool(d, &value) || push(d, c[1], row, value, 0)) return d->error;
            pc += 2;
            break;
        case F_FLOAT:
            if (read_float(d, &value) || push(d, c[1], row, value, 0)) return d->error;
            pc += 2;
            break;
        case F_DOUBLE:
            if (read_double(d, &value) || push(d, c[1], row, value, 0)) return d->error;
            pc += 2;
            break;
        case F_SPAN:
            if (span(d, c[1], row)) return d->error;
            pc += 2;
            break;
        case F_SKIP_SPAN: {
            int64_t start;
            if (read_span(d, &start, &value)) return d->error;
            pc += 1;
            break;
        }
        case F_FIXED:
            if (read_fixed(d, c[2], &value) || push(d, c[1], row, value, c[2])) return d->error;
            pc += 3;
            break;
        case F_SKIP_FIXED:
            if (read_fixed(d, c[1], &value)) return d->error;
            pc += 2;
            break;
        case F_UNION:
        case F_SKIP_UNION:
            if (varint(d, &value)) return d->error;
            if (value < 0 || value >= c[2]) {
                d->error_path = c[1];
                return d->error = ERR_BRANCH;
            }
            if (c[0] == F_UNION && push(d, c[1], row, value, 0)) return d->error;
            pc = c[3 + value];
            break;
        case F_JUMP:
            pc = c[1];
            break;
        case F_TREE:
            if (node(d, c[1], row)) return d->error;
            pc += 2;
            break;
        default:
            return d->error = ERR_PROGRAM;
        }
    }
}

static PyObject *decode_records(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer buffer, starts, lengths, program, kinds;
    PyObject *names;
    int release = 0;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*O!|p", &buffer, &starts, &lengths, &program, &kinds, &PyTuple_Type, &names, &release))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t records = starts.len / (Py_ssize_t)sizeof(int64_t);
    Py_ssize_t paths = kinds.len / (Py_ssize_t)sizeof(int64_t);
    Decoder d = {0};
    d.buf = buffer.buf;
    d.program = program.buf;
    d.program_size = program.len / (Py_ssize_t)sizeof(int64_t);
    d.kinds = kinds.buf;
    d.paths = paths;
    d.first_room = records > 16 ? records : 16;
    d.columns = PyMem_RawCalloc((size_t)(paths ? paths : 1), sizeof(Column));
    if (lengths.len != starts.len || PyTuple_GET_SIZE(names) != paths) {
        PyErr_SetString(PyExc_ValueError, "starts, lengths, kinds and names do not agree");
        goto done;
    }
    if (d.columns == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t p = 0; p < paths; p++) d.columns[p].entries = -1;
    const int64_t *start = starts.buf, *length = lengths.buf;
    for (Py_ssize_t i = 0; i < records; i++)
        if (start[i] < 0 || length[i] < 0 || start[i] + length[i] > buffer.len) {
            PyErr_SetString(PyExc_ValueError, "records run past their buffer");
            goto done;
        }
    /* The GIL is let go only when asked (off the main thread): the main thread taking it back from the inflating threads
     * after every chunk cost more than the decode. */
    Flat flat = {NULL, 0, 6 * d.program_size + 16}; /* a node lays out at most 6 ints per int of the program */
    flat.code = PyMem_RawMalloc((size_t)flat.room * sizeof(int64_t));
    if (flat.code == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    /* a program that does not lay out flat (deeper than FLAT_DEPTH, or not a tree) is left to the numpy decoder */
    if (records > 0 && (flatten(&d, &flat, 0, 0) || emit(&flat, F_END))) d.error = ERR_FLAT;
    PyThreadState *saved = release ? PyEval_SaveThread() : NULL;
    for (Py_ssize_t i = 0; i < records && !d.error; i++) {
        d.pos = start[i];
        d.end = start[i] + length[i];
        if (run_flat(&d, flat.code, (int64_t)i)) break;
        if (d.pos != d.end) {
            d.error = ERR_END;
            d.error_record = (int64_t)i;
            d.error_at = d.pos;
            break;
        }
    }
    if (saved != NULL) PyEval_RestoreThread(saved);
    PyMem_RawFree(flat.code);
    if (d.error == ERR_ENTRIES || d.error == ERR_FLAT) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    if (d.error) {
        decode_error(&d, names);
        goto done;
    }
    PyObject *columns = PyList_New(paths), *entries = PyList_New(paths);
    if (columns == NULL || entries == NULL) {
        Py_XDECREF(columns);
        Py_XDECREF(entries);
        goto done;
    }
    for (Py_ssize_t p = 0; p < paths; p++) {
        Column *c = &d.columns[p];
        PyObject *item;
        if (c->size == 0) {
            item = Py_NewRef(Py_None);
        } else if (((const int64_t *)kinds.buf)[p] == KIND_SPAN) {
            item = Py_BuildValue("(NNN)", hand_over(&c->rows, c->size), hand_over(&c->values, c->size), hand_over(&c->lengths, c->size));
        } else {
            item = Py_BuildValue("(NN)", hand_over(&c->rows, c->size), hand_over(&c->values, c->size));
        }
        PyObject *count = PyLong_FromLongLong((long long)c->entries);
        if (item == NULL || count == NULL) {
            Py_XDECREF(item);
            Py_XDECREF(count);
            Py_DECREF(columns);
            Py_DECREF(entries);
            goto done;
        }
        PyList_SET_ITEM(columns, p, item);
        PyList_SET_ITEM(entries, p, count);
    }
    result = Py_BuildValue("(NN)", columns, entries);
done:
    if (d.columns != NULL) {
        for (Py_ssize_t p = 0; p < paths; p++) {
            PyMem_RawFree(d.columns[p].rows);
            PyMem_RawFree(d.columns[p].values);
            PyMem_RawFree(d.columns[p].lengths);
        }
        PyMem_RawFree(d.columns);
    }
    PyBuffer_Release(&buffer);
    PyBuffer_Release(&starts);
    PyBuffer_Release(&lengths);
    PyBuffer_Release(&program);
    PyBuffer_Release(&kinds);
    return result;
}


/* gather_spans(data, starts, lengths, offsets, out, release) -> bool: byte
 * spans of `data` in the order given, which must be buffer order, copied end
 * to end into `out` (writable, exactly their total length) with their int32
 * offsets into `offsets` (writable, count + 1 of them, native order): an
 * Arrow binary array's two buffers, filled in one pass, in memory the caller
 * chose (the read path's pool). False (the caller's general path) when the
 * spans are not in buffer order; ValueError when one runs outside `data`,
 * overlaps the one before, or the buffers do not fit, as
 * `hfile_cells.spans_to_binary` says. The copy lets the GIL go when
 * `release` (off the main thread). */
static PyObject *gather_spans(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer data, starts, lengths, offsets, out;
    int release = 0;
    if (!PyArg_ParseTuple(args, "y*y*y*w*w*|p", &data, &starts, &lengths, &offsets, &out, &release))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t count = starts.len / (Py_ssize_t)sizeof(int64_t);
    const int64_t *start = starts.buf, *length = lengths.buf;
    int64_t total = 0;
    if (lengths.len != starts.len) {
        PyErr_SetString(PyExc_ValueError, "starts and lengths do not agree");
        goto done;
    }
    for (Py_ssize_t i = 0; i < count; i++) {  /* every span inside the buffer first, as the general path checks */
        if (start[i] < 0 || length[i] < 0 || start[i] + length[i] > (int64_t)data.len) {
            PyErr_SetString(PyExc_ValueError, "byte spans run past their buffer");
            goto done;
        }
        total += length[i];
    }
    for (Py_ssize_t i = 1; i < count; i++)
        if (start[i] < start[i - 1]) {  /* not in buffer order: the general path sorts them */
            result = Py_NewRef(Py_False);
            goto done;
        }
    for (Py_ssize_t i = 1; i < count; i++)
        if (start[i] < start[i - 1] + length[i - 1]) {
            PyErr_SetString(PyExc_ValueError, "byte spans overlap");
            goto done;
        }
    if (total > INT32_MAX || total != (int64_t)out.len || offsets.len < (Py_ssize_t)((count + 1) * (Py_ssize_t)sizeof(int32_t))) {
        PyErr_SetString(PyExc_ValueError, "the buffers given do not fit the spans");
        goto done;
    }
    {
        int32_t *offset = offsets.buf;
        char *to = out.buf;
        const char *from = data.buf;
        PyThreadState *saved = release ? PyEval_SaveThread() : NULL;
        int32_t at = 0;
        for (Py_ssize_t i = 0; i < count; i++) {
            offset[i] = at;
            memcpy(to + at, from + start[i], (size_t)length[i]);
            at += (int32_t)length[i];
        }
        offset[count] = at;
        if (saved != NULL)
            PyEval_RestoreThread(saved);
    }
    result = Py_NewRef(Py_True);
done:
    PyBuffer_Release(&data);
    PyBuffer_Release(&starts);
    PyBuffer_Release(&lengths);
    PyBuffer_Release(&offsets);
    PyBuffer_Release(&out);
    return result;
}

/* index_in_strings(set_chunks, chunks, out[, release[, set_positions]]): for
 * each string of `chunks`, the index (across the chunks) of the first equal
 * string of `set_chunks`, or -1, into `out` (int32s, one per string): Arrow's
 * index_in for null-free string arrays, by one open-addressing table of the
 * set's strings (tagged with their hashes' high halves), each match compared
 * in full; strings are hashed a batch at a time and their slots, then the
 * strings the tags point at, fetched ahead (a run of 50,000 names: 2.1 to 2.7
 * ms, against 3.6 to 4.7 ms looked up one by one). A chunk is (offsets, data,
 * first, count): a string array's int32 offsets and bytes, its first element
 * and its length. With `set_positions` (int64s), the set is the strings at
 * those positions across `set_chunks` (a run's rows of a whole listing, not
 * copied out), and an index is one into `set_positions`. ValueError when a
 * chunk's buffers do not hold what its offsets say (only the strings read
 * are checked), or a position is outside the chunks. */
static uint64_t string_hash(const unsigned char *p, int32_t length) {
    uint64_t h = (uint64_t)length * 0x9E3779B97F4A7C15ULL;
    while (length >= 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        h = (h ^ word) * 0xFF51AFD7ED558CCDULL;
        h ^= h >> 32;
        p += 8;
        length -= 8;
    }
    if (length > 0) {
        uint64_t word = 0;
        memcpy(&word, p, (size_t)length);
        h = (h ^ word) * 0xC4CEB9FE1A85EC53ULL;
        h ^= h >> 29;
    }
    return h;
}

typedef struct {
    Py_buffer offsets, data;
    Py_ssize_t first, count;
} StringChunk;

/* A slot of the match table: a set string's index (-1: empty) and its hash's high half, compared before the
 * string itself is read (a probe touches the table, and the string only when the tags agree). */
typedef struct {
    uint32_t tag;
    int32_t index;
} Slot;

#define MATCH_BATCH 16 /* strings hashed and their slots fetched ahead together: the table's misses overlap */
#if defined(__GNUC__) || defined(__clang__)
#define FETCH_AHEAD(address, write) __builtin_prefetch((address), (write))
#else /* a hint only: other compilers go without it */
#define FETCH_AHEAD(address, write) ((void)(address))
#endif

/* The slot holding a string equal to this one, or the empty slot where it would go, from `slot` on. */
static inline Py_ssize_t probe_from(const Slot *slots, Py_ssize_t mask, const int32_t *lengths, const unsigned char *const *heads,
                                    Py_ssize_t slot, uint32_t tag, const unsigned char *head, int32_t length) {
    for (;; slot = (slot + 1) & mask) {
        int32_t other = slots[slot].index;
        if (other < 0 || (slots[slot].tag == tag && lengths[other] == length && memcmp(heads[other], head, (size_t)length) == 0))
            return slot;
    }
}

/* The hashes of a batch of strings, their slots fetched meanwhile (`write`: for filling them). */
static inline void hash_ahead(const Slot *slots, Py_ssize_t mask, const unsigned char *const *heads, const int32_t *lengths,
                              Py_ssize_t n, int write, uint64_t *hashes) {
    for (Py_ssize_t k = 0; k < n; k++) {
        hashes[k] = string_hash(heads[k], lengths[k]);
        if (write) FETCH_AHEAD(&slots[hashes[k] & (uint64_t)mask], 1);
        else FETCH_AHEAD(&slots[hashes[k] & (uint64_t)mask], 0);
    }
}

/* The set's strings (heads, lengths) put in the table in order, a batch at a time; a repeat finds the first one, which stays. */
static void fill_table(Slot *slots, Py_ssize_t mask, const int32_t *lengths, const unsigned char *const *heads, Py_ssize_t count) {
    uint64_t hashes[MATCH_BATCH];
    for (Py_ssize_t base = 0; base < count; base += MATCH_BATCH) {
        Py_ssize_t n = count - base < MATCH_BATCH ? count - base : MATCH_BATCH;
        hash_ahead(slots, mask, heads + base, lengths + base, n, 1, hashes);
        for (Py_ssize_t k = 0; k < n; k++) {
            Py_ssize_t index = base + k;
            Py_ssize_t slot = probe_from(slots, mask, lengths, heads, (Py_ssize_t)(hashes[k] & (uint64_t)mask), (uint32_t)(hashes[k] >> 32),
                                         heads[index], lengths[index]);
            if (slots[slot].index < 0) {
                slots[slot].index = (int32_t)index;
                slots[slot].tag = (uint32_t)(hashes[k] >> 32);
            }
        }
    }
}

/* For each string (heads, lengths), the index of the equal set string in the table, or -1, a batch at a time: the
 * batch's slots fetched, then the strings their tags point at, then each compared in full. */
static void match_table(const Slot *slots, Py_ssize_t mask, const int32_t *set_lengths, const unsigned char *const *set_heads,
                        const unsigned char *const *heads, const int32_t *lengths, Py_ssize_t count, int32_t *found) {
    uint64_t hashes[MATCH_BATCH];
    Py_ssize_t at[MATCH_BATCH];
    for (Py_ssize_t base = 0; base < count; base += MATCH_BATCH) {
        Py_ssize_t n = count - base < MATCH_BATCH ? count - base : MATCH_BATCH;
        hash_ahead(slots, mask, heads + base, lengths + base, n, 0, hashes);
        for (Py_ssize_t k = 0; k < n; k++) { /* the first slot whose tag agrees (or the empty one) */
            uint32_t tag = (uint32_t)(hashes[k] >> 32);
            Py_ssize_t slot = (Py_ssize_t)(hashes[k] & (uint64_t)mask);
            while (slots[slot].index >= 0 && slots[slot].tag != tag) slot = (slot + 1) & mask;
            at[k] = slot;
            if (slots[slot].index >= 0) FETCH_AHEAD(set_heads[slots[slot].index], 0);
        }
        for (Py_ssize_t k = 0; k < n; k++) {
            Py_ssize_t index = base + k;
            Py_ssize_t slot = at[k];
            int32_t other = slots[slot].index;
            if (other >= 0 && !(set_lengths[other] == lengths[index] && memcmp(set_heads[other], heads[index], (size_t)lengths[index]) == 0))
                slot = probe_from(slots, mask, set_lengths, set_heads, (slot + 1) & mask, (uint32_t)(hashes[k] >> 32), heads[index], lengths[index]);
            found[index] = slots[slot].index;
        }
    }
}

/* Each string's bytes and length across the chunks, in order. */
static void place_strings(const StringChunk *chunks, Py_ssize_t chunk_count, int32_t *lengths, const unsigned char **heads) {
    Py_ssize_t index = 0;
    for (Py_ssize_t c = 0; c < chunk_count; c++) {
        const int32_t *at = (const int32_t *)chunks[c].offsets.buf + chunks[c].first;
        const unsigned char *bytes = chunks[c].data.buf;
        for (Py_ssize_t i = 0; i < chunks[c].count; i++, index++) {
            lengths[index] = at[i + 1] - at[i];
            heads[index] = bytes + at[i];
        }
    }
}

static void release_chunks(StringChunk *chunks, Py_ssize_t count) {
    if (chunks == NULL) return;
    for (Py_ssize_t c = 0; c < count; c++) {
        PyBuffer_Release(&chunks[c].offsets);
        PyBuffer_Release(&chunks[c].data);
    }
    PyMem_Free(chunks);
}

/* Whether a chunk's string `i` lies within its buffers. */
static int string_fits(const StringChunk *chunk, Py_ssize_t i) {
    const int32_t *at = (const int32_t *)chunk->offsets.buf + chunk->first;
    return at[i] >= 0 && at[i + 1] >= at[i] && (Py_ssize_t)at[i + 1] <= chunk->data.len;
}

/* The chunks of a sequence, their buffers held (released by release_chunks); NULL with an exception set.
 * `check_all`: every string is checked to lie within its buffers (else the caller checks those it reads). */
static StringChunk *string_chunks(PyObject *sequence, Py_ssize_t *chunk_count, Py_ssize_t *total, int check_all) {
    PyObject *items = PySequence_Fast(sequence, "string chunks must be a sequence");
    if (items == NULL) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(items);
    StringChunk *chunks = PyMem_Calloc((size_t)(n ? n : 1), sizeof(StringChunk));
    if (chunks == NULL) {
        Py_DECREF(items);
        PyErr_NoMemory();
        return NULL;
    }
    *total = 0;
    for (Py_ssize_t c = 0; c < n; c++) {
        StringChunk *chunk = &chunks[c];
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(items, c), "y*y*nn", &chunk->offsets, &chunk->data, &chunk->first, &chunk->count)) {
            *chunk_count = c;
            goto fail;
        }
        *chunk_count = c + 1;
        const int32_t *at = (const int32_t *)chunk->offsets.buf + chunk->first;
        int fits = chunk->first >= 0 && chunk->count >= 0 &&
                   chunk->offsets.len >= (chunk->first + chunk->count + 1) * (Py_ssize_t)sizeof(int32_t);
        for (Py_ssize_t i = 0; fits && check_all && i < chunk->count; i++)
            fits = at[i] >= 0 && at[i + 1] >= at[i];
        if (!fits || (check_all && chunk->count > 0 && (Py_ssize_t)at[chunk->count] > chunk->data.len)) {
            PyErr_SetString(PyExc_ValueError, "string offsets do not fit their buffers");
            goto fail;
        }
        *total += chunk->count;
    }
    *chunk_count = n;
    Py_DECREF(items);
    return chunks;
fail:
    release_chunks(chunks, *chunk_count);
    Py_DECREF(items);
    return NULL;
}

/* The strings at `positions` across the chunks (starting at `chunk_starts`), each located and checked: NULL, or
 * what is wrong (raised once the GIL is back). */
static const char *pick_strings(const StringChunk *chunks, Py_ssize_t chunk_count, const Py_ssize_t *chunk_starts, const int64_t *positions,
                                Py_ssize_t count, int32_t *lengths, const unsigned char **heads) {
    for (Py_ssize_t index = 0; index < count; index++) {
        int64_t position = positions[index];
        if (position < 0 || position >= chunk_starts[chunk_count]) return "a set position is outside the strings";
        Py_ssize_t low = 0, high = chunk_count - 1; /* the last chunk starting at or before it */
        while (low < high) {
            Py_ssize_t middle = (low + high + 1) / 2;
            if (chunk_starts[middle] <= position) low = middle; else high = middle - 1;
        }
        const StringChunk *chunk = &chunks[low];
        Py_ssize_t i = (Py_ssize_t)(position - chunk_starts[low]);
        if (!string_fits(chunk, i)) return "string offsets do not fit their buffers";
        const int32_t *at = (const int32_t *)chunk->offsets.buf + chunk->first;
        lengths[index] = at[i + 1] - at[i];
        heads[index] = (const unsigned char *)chunk->data.buf + at[i];
    }
    return NULL;
}

static PyObject *index_in_strings(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *set_sequence, *sequence, *positions_object = Py_None;
    Py_buffer out, positions = {0};
    int release = 0;
    if (!PyArg_ParseTuple(args, "OOw*|pO", &set_sequence, &sequence, &out, &release, &positions_object)) return NULL;
    PyObject *result = NULL;
    Py_ssize_t set_chunk_count = 0, chunk_count = 0, set_count = 0, count = 0;
    StringChunk *set_chunks = NULL, *chunks = NULL;
    Slot *slots = NULL;
    int32_t *lengths = NULL, *value_lengths = NULL;
    const unsigned char **heads = NULL, **value_heads = NULL;
    Py_ssize_t *chunk_starts = NULL;
    int picked = positions_object != Py_None;
    if (picked && PyObject_GetBuffer(positions_object, &positions, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&out);
        return NULL;
    }
    set_chunks = string_chunks(set_sequence, &set_chunk_count, &set_count, !picked);
    if (set_chunks == NULL) goto done;
    chunks = string_chunks(sequence, &chunk_count, &count, 1);
    if (chunks == NULL) goto done;
    if (picked) {
        if (positions.len % (Py_ssize_t)sizeof(int64_t)) {
            PyErr_SetString(PyExc_ValueError, "set positions must be int64s");
            goto done;
        }
        /* each picked string located (by its chunk) and checked before the GIL goes */
        set_count = positions.len / (Py_ssize_t)sizeof(int64_t);
        chunk_starts = PyMem_Malloc((size_t)(set_chunk_count + 1) * sizeof(Py_ssize_t));
        if (chunk_starts == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        chunk_starts[0] = 0;
        for (Py_ssize_t c = 0; c < set_chunk_count; c++) chunk_starts[c + 1] = chunk_starts[c] + set_chunks[c].count;
    }
    if (out.len < count * (Py_ssize_t)sizeof(int32_t) || set_count > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "the output does not fit the strings");
        goto done;
    }
    Py_ssize_t size = 16;
    while (size < 2 * set_count) size *= 2;
    size_t held = (size_t)(set_count ? set_count : 1), values_held = (size_t)(count ? count : 1);
    slots = PyMem_RawMalloc((size_t)size * sizeof(Slot));
    lengths = PyMem_RawMalloc(held * sizeof(int32_t));
    heads = PyMem_RawMalloc(held * sizeof(unsigned char *));
    value_lengths = PyMem_RawMalloc(values_held * sizeof(int32_t));
    value_heads = PyMem_RawMalloc(values_held * sizeof(unsigned char *));
    if (slots == NULL || lengths == NULL || heads == NULL || value_lengths == NULL || value_heads == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    {
        Py_ssize_t mask = size - 1;
        /* the picked strings found and checked with the GIL let go too: 50,000 random reads into a whole listing,
         * which held it for a fifth of a plan's matching */
        PyThreadState *saved = release ? PyEval_SaveThread() : NULL;
        const char *fault = picked ? pick_strings(set_chunks, set_chunk_count, chunk_starts, positions.buf, set_count, lengths, heads) : NULL;
        if (fault == NULL) {
            memset(slots, 0xFF, (size_t)size * sizeof(Slot));
            if (!picked) place_strings(set_chunks, set_chunk_count, lengths, heads); /* picked: placed above, each checked */
            place_strings(chunks, chunk_count, value_lengths, value_heads);
            fill_table(slots, mask, lengths, heads, set_count);
            match_table(slots, mask, lengths, heads, value_heads, value_lengths, count, (int32_t *)out.buf);
        }
        if (saved != NULL) PyEval_RestoreThread(saved);
        if (fault != NULL) {
            PyErr_SetString(PyExc_ValueError, fault);
            goto done;
        }
    }
    result = Py_NewRef(Py_None);
done:
    PyMem_RawFree(slots);
    PyMem_RawFree(lengths);
    PyMem_RawFree(heads);
    PyMem_RawFree(value_lengths);
    PyMem_RawFree(value_heads);
    PyMem_Free(chunk_starts);
    release_chunks(set_chunks, set_chunk_count);
    release_chunks(chunks, chunk_count);
    if (picked) PyBuffer_Release(&positions);
    PyBuffer_Release(&out);
    return result;
}

/* prefix_index_strings(prefixes, width, chunks, out[, release]): for each
 * string of `chunks` (as index_in_strings takes them), the index of the one
 * of `prefixes` it starts with, or -1, into `out` (int32s, one per string).
 * `prefixes` is distinct prefixes of `width` bytes each, end to end, in
 * ascending byte order; each string's first `width` bytes are found by a
 * binary search, skipped when they are those of the string before (keys in
 * order share them in long runs). ValueError when the prefixes are not
 * sorted and distinct or a chunk's buffers do not hold what its offsets say. */
static PyObject *prefix_index_strings(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer prefixes, out;
    Py_ssize_t width;
    PyObject *sequence;
    int release = 0;
    if (!PyArg_ParseTuple(args, "y*nOw*|p", &prefixes, &width, &sequence, &out, &release)) return NULL;
    PyObject *result = NULL;
    Py_ssize_t chunk_count = 0, count = 0;
    StringChunk *chunks = NULL;
    if (width <= 0 || prefixes.len % width != 0) {
        PyErr_SetString(PyExc_ValueError, "the prefixes are not of the width given");
        goto done;
    }
    Py_ssize_t known = prefixes.len / width;
    const unsigned char *table = prefixes.buf;
    for (Py_ssize_t i = 1; i < known; i++)
        if (memcmp(table + (i - 1) * width, table + i * width, (size_t)width) >= 0) {
            PyErr_SetString(PyExc_ValueError, "the prefixes are not sorted and distinct");
            goto done;
        }
    chunks = string_chunks(sequence, &chunk_count, &count, 1);
    if (chunks == NULL) goto done;
    if (out.len < count * (Py_ssize_t)sizeof(int32_t) || known > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "the output does not fit the strings");
        goto done;
    }
    {
        int32_t *found = out.buf;
        Py_ssize_t index = 0;
        const unsigned char *last = NULL; /* the prefix of the string before, when it had one */
        int32_t last_found = -1;
        PyThreadState *saved = release ? PyEval_SaveThread() : NULL;
        for (Py_ssize_t c = 0; c < chunk_count; c++) {
            const int32_t *at = (const int32_t *)chunks[c].offsets.buf + chunks[c].first;
            const unsigned char *bytes = chunks[c].data.buf;
            for (Py_ssize_t i = 0; i < chunks[c].count; i++, index++) {
                const unsigned char *value = bytes + at[i];
                if (at[i + 1] - at[i] < width) {
                    found[index] = -1;
                    continue;
                }
                if (last != NULL && memcmp(last, value, (size_t)width) == 0) {
                    found[index] = last_found;
                    continue;
                }
                Py_ssize_t low = 0, high = known; /* the answer is in [low, high) */
                last_found = -1;
                while (low < high) {
                    Py_ssize_t middle = low + (high - low) / 2;
                    int order = memcmp(table + middle * width, value, (size_t)width);
                    if (order == 0) {
                        last_found = (int32_t)middle;
                        break;
                    }
                    if (order < 0) low = middle + 1;
                    else high = middle;
                }
                found[index] = last_found;
                last = value;
            }
        }
        if (saved != NULL) PyEval_RestoreThread(saved);
    }
    result = Py_NewRef(Py_None);
done:
    release_chunks(chunks, chunk_count);
    PyBuffer_Release(&prefixes);
    PyBuffer_Release(&out);
    return result;
}

/* Strings compared as bytes, the shorter first when one is the other's prefix. */
static inline int compare_strings(const unsigned char *a, int32_t a_length, const unsigned char *b, int32_t b_length) {
    int order = memcmp(a, b, (size_t)(a_length < b_length ? a_length : b_length));
    return order != 0 ? order : (a_length > b_length) - (a_length < b_length);
}

typedef struct {
    const int32_t *offsets;
    const unsigned char *bytes;
    Py_ssize_t next, end; /* the run's strings left: [next, end) of its chunk */
} AscendingRun;

#define MAX_ASCENDING_RUNS 16

/* distinct_in_runs(chunks[, release]) -> 1, 0 or -1: whether no string of
 * `chunks` (as index_in_strings takes them, taken as one sequence) repeats,
 * when they are at most MAX_ASCENDING_RUNS runs each strictly ascending (a
 * pivot's identities: each metadata file group's in key order, one after
 * another). Walked once to find the runs (an equal neighbour: 0), then the
 * runs merged, comparing each string with the one before it in the merge;
 * -1 for more runs (the caller hashes instead). Each string checked to lie in
 * its buffers first. */
static PyObject *distinct_in_runs(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *sequence;
    int release = 0;
    if (!PyArg_ParseTuple(args, "O|p", &sequence, &release)) return NULL;
    Py_ssize_t chunk_count = 0, count = 0;
    StringChunk *chunks = string_chunks(sequence, &chunk_count, &count, 1);
    if (chunks == NULL) return NULL;
    AscendingRun runs[MAX_ASCENDING_RUNS];
    int run_count = 0, answer = 1;
    PyThreadState *saved = release ? PyEval_SaveThread() : NULL;
    const unsigned char *previous = NULL;
    int32_t previous_length = 0;
    for (Py_ssize_t c = 0; c < chunk_count && answer == 1; c++) {
        const int32_t *at = (const int32_t *)chunks[c].offsets.buf + chunks[c].first;
        const unsigned char *bytes = chunks[c].data.buf;
        for (Py_ssize_t i = 0; i < chunks[c].count; i++) {
            const unsigned char *value = bytes + at[i];
            int32_t length = at[i + 1] - at[i];
            int order = previous == NULL || i == 0 ? -1 : compare_strings(previous, previous_length, value, length);
            if (order == 0) {
                answer = 0;
                break;
            }
            if (order > 0 || i == 0) { /* a run starts here (a chunk's first string starts one too) */
                if (run_count == MAX_ASCENDING_RUNS) {
                    answer = -1;
                    break;
                }
                runs[run_count].offsets = at;
                runs[run_count].bytes = bytes;
                runs[run_count].next = i;
                run_count++;
            }
            runs[run_count - 1].end = i + 1;
            previous = value;
            previous_length = length;
        }
    }
    /* the runs merged (one strictly ascending run repeats nothing): the smallest head each time, which must differ
     * from the one taken before */
    previous = NULL;
    while (answer == 1 && run_count > 1) {
        int smallest = -1;
        const unsigned char *head = NULL;
        int32_t head_length = 0;
        for (int r = 0; r < run_count; r++) {
            if (runs[r].next >= runs[r].end) continue;
            const unsigned char *value = runs[r].bytes + runs[r].offsets[runs[r].next];
            int32_t length = runs[r].offsets[runs[r].next + 1] - runs[r].offsets[runs[r].next];
            if (smallest < 0 || compare_strings(value, length, head, head_length) < 0) {
                smallest = r;
                head = value;
                head_length = length;
            }
        }
        if (smallest < 0) break;
        if (previous != NULL && compare_strings(previous, previous_length, head, head_length) == 0) answer = 0;
        previous = head;
        previous_length = head_length;
        runs[smallest].next++;
    }
    if (saved != NULL) PyEval_RestoreThread(saved);
    release_chunks(chunks, chunk_count);
    return PyLong_FromLong(answer);
}

/* ---- A column's fields of chosen records gathered at once (`record_gather`, for FlatStats.add_decoded) ----
 *
 * A chunk's statistics records are decoded a path at a time (`decode_records`); each column's records then take
 * their identity, file name, counts and bounds. In numpy and Arrow that was a dozen calls a field, and the reading
 * thread handed the GIL over and took it back at each: half its time in a cold 1M plan. Here a column's fields are
 * located in one call and copied in a second, each letting the GIL go once.
 */
/* One field's rows located (see locate_fields): -1, or the row that is outside the field's values. */
static Py_ssize_t locate_one(const int64_t *rows, Py_ssize_t n, const int64_t *at, Py_ssize_t present_count, int have_present,
                             const int64_t *length, Py_ssize_t length_count, int have_lengths, int64_t *out, int64_t *absent,
                             int64_t *total) {
    Py_ssize_t j = 0;
    int64_t first = present_count ? at[0] : 0;
    /* present in an unbroken range of rows (a union branch of one column's records): no search */
    int unbroken = have_present && present_count && at[present_count - 1] - first + 1 == present_count;
    if (have_present && !unbroken && n) { /* the first present row at or after the first chosen one */
        Py_ssize_t high = present_count;
        while (j < high) {
            Py_ssize_t middle = j + (high - j) / 2;
            if (at[middle] < rows[0]) j = middle + 1; else high = middle;
        }
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t position = -1;
        if (!have_present) {
            position = rows[i];
            if (position < 0 || (have_lengths && position >= length_count)) return i;
        } else if (unbroken) {
            if (rows[i] >= first && rows[i] - first < present_count) position = rows[i] - first;
        } else {
            while (j < present_count && at[j] < rows[i]) j++;
            if (j < present_count && at[j] == rows[i]) position = j;
        }
        if (position < 0) (*absent)++;
        else if (have_lengths) {
            if (position >= length_count || length[position] < 0) return i;
            *total += length[position];
        }
        out[i] = position;
    }
    return -1;
}

/* locate_fields(rows, fields, positions[, release]) -> (missing, totals): `rows` int64s, strictly ascending (the records
 * chosen); each field (present, lengths): `present` the int64 rows (strictly ascending) a path has values for, in
 * the order of its values, or None when row r's value is the r-th; `lengths` its spans' int64 lengths, or None.
 * `positions` (writable, len(fields) * len(rows) int64s: megabytes a column, which the caller takes from the read
 * pool) gets, field after field, where each row's value is (-1: none); `missing` counts the rows without one, and `totals` sums their spans'
 * lengths. ValueError when the rows are not strictly ascending or a row is outside a field. Lets the GIL go for
 * the search when `release`. */
static PyObject *locate_fields(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer rows_view, positions;
    PyObject *fields;
    int release = 0;
    if (!PyArg_ParseTuple(args, "y*O!w*|p", &rows_view, &PyList_Type, &fields, &positions, &release)) return NULL;
    const int64_t *rows = rows_view.buf;
    Py_ssize_t n = rows_view.len / (Py_ssize_t)sizeof(int64_t), field_count = PyList_GET_SIZE(fields);
    PyObject *missing = NULL, *totals = NULL, *result = NULL;
    Py_buffer *views = PyMem_Calloc((size_t)(2 * field_count + 1), sizeof(Py_buffer));
    int64_t *counts = PyMem_Calloc((size_t)(2 * field_count + 1), sizeof(int64_t));
    if (views == NULL || counts == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 1; i < n; i++)
        if (rows[i] <= rows[i - 1]) {
            PyErr_SetString(PyExc_ValueError, "the rows chosen are not ascending");
            goto done;
        }
    if (positions.len != (Py_ssize_t)sizeof(int64_t) * n * field_count) {
        PyErr_SetString(PyExc_ValueError, "the positions do not fit the rows and fields");
        goto done;
    }
    for (Py_ssize_t f = 0; f < field_count; f++) { /* every view taken first: the GIL goes for the search */
        PyObject *field = PyList_GET_ITEM(fields, f), *pair[2];
        if (!PyArg_ParseTuple(field, "OO", &pair[0], &pair[1])) goto done;
        for (int k = 0; k < 2; k++)
            if (pair[k] != Py_None && PyObject_GetBuffer(pair[k], &views[2 * f + k], PyBUF_SIMPLE) < 0) goto done;
    }
    {
        Py_ssize_t outside = -1;
        PyThreadState *saved = release ? PyEval_SaveThread() : NULL;
        for (Py_ssize_t f = 0; f < field_count && outside < 0; f++) {
            Py_buffer *present = &views[2 * f], *lengths = &views[2 * f + 1];
            outside = locate_one(rows, n, present->buf, present->len / (Py_ssize_t)sizeof(int64_t), present->obj != NULL, lengths->buf,
                                 lengths->len / (Py_ssize_t)sizeof(int64_t), lengths->obj != NULL,
                                 (int64_t *)positions.buf + f * n, &counts[2 * f], &counts[2 * f + 1]);
        }
        if (saved != NULL) PyEval_RestoreThread(saved);
        if (outside >= 0) {
            PyErr_SetString(PyExc_ValueError, "a row chosen is outside a field's values");
            goto done;
        }
    }
    missing = PyList_New(field_count);
    totals = PyList_New(field_count);
    if (missing == NULL || totals == NULL) goto done;
    for (Py_ssize_t f = 0; f < field_count; f++) {
        PyObject *absent = PyLong_FromLongLong(counts[2 * f]), *total = PyLong_FromLongLong(counts[2 * f + 1]);
        if (absent == NULL || total == NULL) {
            Py_XDECREF(absent);
            Py_XDECREF(total);
            goto done;
        }
        PyList_SET_ITEM(missing, f, absent);
        PyList_SET_ITEM(totals, f, total);
    }
    result = PyTuple_Pack(2, missing, totals);
done:
    if (views != NULL)
        for (Py_ssize_t k = 0; k < 2 * field_count; k++)
            if (views[k].obj != NULL) PyBuffer_Release(&views[k]);
    PyMem_Free(views);
    PyMem_Free(counts);
    PyBuffer_Release(&positions);
    Py_XDECREF(missing);
    Py_XDECREF(totals);
    PyBuffer_Release(&rows_view);
    return result;
}

/* Whether the bytes are UTF-8 as Unicode defines it (no overlong forms, surrogates or code points past U+10FFFF),
 * as Arrow checks a string array: eight ASCII bytes at a time, else a character at a time. */
static int is_utf8(const unsigned char *s, int64_t n) {
    int64_t i = 0;
    while (i < n) {
        if (i + 8 <= n) {
            uint64_t word;
            memcpy(&word, s + i, 8);
            if ((word & 0x8080808080808080ULL) == 0) {
                i += 8;
                continue;
            }
        }
        unsigned char c = s[i];
        if (c < 0x80) {
            i++;
        } else if (c < 0xC2) {
            return 0;
        } else if (c < 0xE0) {
            if (i + 1 >= n || (s[i + 1] & 0xC0) != 0x80) return 0;
            i += 2;
        } else if (c < 0xF0) {
            if (i + 2 >= n || (s[i + 1] & 0xC0) != 0x80 || (s[i + 2] & 0xC0) != 0x80) return 0;
            if ((c == 0xE0 && s[i + 1] < 0xA0) || (c == 0xED && s[i + 1] > 0x9F)) return 0;
            i += 3;
        } else if (c < 0xF5) {
            if (i + 3 >= n || (s[i + 1] & 0xC0) != 0x80 || (s[i + 2] & 0xC0) != 0x80 || (s[i + 3] & 0xC0) != 0x80) return 0;
            if ((c == 0xF0 && s[i + 1] < 0x90) || (c == 0xF4 && s[i + 1] > 0x8F)) return 0;
            i += 4;
        } else {
            return 0;
        }
    }
    return 1;
}

enum { FIELD_WORDS = 0, FIELD_BOOLS = 1, FIELD_SPANS = 2 };
#define FIELD_VIEWS 6

/* A field to fill: its kind, the views it reads (values; or buffer, starts, lengths) and writes (values or bits, or
 * offsets and bytes; then the validity bits, when some row has no value and the field says so). */
typedef struct {
    int kind, check_utf8, has_validity;
    Py_buffer views[FIELD_VIEWS];
    int held;
} FillField;

static int fill_view(FillField *field, PyObject *object, int writable) {
    if (PyObject_GetBuffer(object, &field->views[field->held], writable ? PyBUF_WRITABLE : PyBUF_SIMPLE) < 0) return -1;
    field->held++;
    return 0;
}

static int fill_parse(FillField *field, PyObject *spec) {
    Py_ssize_t size = PyTuple_Check(spec) ? PyTuple_GET_SIZE(spec) : 0;
    if (size < 1 || (field->kind = (int)PyLong_AsLong(PyTuple_GET_ITEM(spec, 0))) < 0 || PyErr_Occurred()) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "a field to fill is not a (kind, ...) tuple");
        return -1;
    }
    /* words and bools: (kind, values, out, validity | None); spans: (kind, buffer, starts, lengths, check_utf8, offsets, out, validity | None) */
    Py_ssize_t inputs = field->kind == FIELD_SPANS ? 3 : 1, expected = field->kind == FIELD_SPANS ? 8 : 4;
    if (field->kind > FIELD_SPANS || size != expected) {
        PyErr_SetString(PyExc_ValueError, "a field to fill has the wrong shape");
        return -1;
    }
    for (Py_ssize_t k = 1; k <= inputs; k++)
        if (fill_view(field, PyTuple_GET_ITEM(spec, k), 0) < 0) return -1;
    Py_ssize_t outputs_from = inputs + 1;
    if (field->kind == FIELD_SPANS) {
        field->check_utf8 = PyObject_IsTrue(PyTuple_GET_ITEM(spec, outputs_from));
        outputs_from++;
    }
    for (Py_ssize_t k = outputs_from; k < expected; k++) {
        PyObject *object = PyTuple_GET_ITEM(spec, k);
        if (k == expected - 1 && object == Py_None) break;
        if (fill_view(field, object, 1) < 0) return -1;
        if (k == expected - 1) field->has_validity = 1;
    }
    return 0;
}

/* One field's rows filled; 0, or 1 when the rows' positions or spans are outside what the field reads or writes,
 * 2 when a span is not UTF-8 (without the GIL). */
static int fill_one(FillField *field, const int64_t *positions, Py_ssize_t n) {
    Py_buffer *v = field->views;
    unsigned char *validity = NULL;
    if (field->has_validity) {
        Py_buffer *bits = &v[field->held - 1];
        if (bits->len < (n + 7) / 8) return 1;
        validity = bits->buf;
        memset(validity, 0, (size_t)((n + 7) / 8));
    }
    if (field->kind == FIELD_WORDS || field->kind == FIELD_BOOLS) {
        int words = field->kind == FIELD_WORDS;
        Py_ssize_t count = words ? v[0].len / 8 : v[0].len;
        if (v[1].len < (words ? 8 * n : (n + 7) / 8)) return 1;
        if (!words) memset(v[1].buf, 0, (size_t)((n + 7) / 8));
        const unsigned char *values = v[0].buf;
        unsigned char *out = v[1].buf;
        for (Py_ssize_t i = 0; i < n; i++) {
            int64_t at = positions[i];
            if (at >= count) return 1;
            if (at < 0) {
                if (words) memset(out + 8 * i, 0, 8);
                continue;
            }
            if (validity != NULL) validity[i >> 3] |= (unsigned char)(1u << (i & 7));
            if (words) memcpy(out + 8 * i, values + 8 * at, 8);
            else if (values[at]) out[i >> 3] |= (unsigned char)(1u << (i & 7));
        }
        return 0;
    }
    const unsigned char *buffer = v[0].buf;
    const int64_t *starts = v[1].buf, *lengths = v[2].buf;
    Py_ssize_t count = v[1].len / 8 < v[2].len / 8 ? v[1].len / 8 : v[2].len / 8;
    if (v[3].len < 4 * (n + 1)) return 1;
    int32_t *offsets = v[3].buf;
    unsigned char *out = v[4].buf;
    int64_t at_byte = 0, room = v[4].len;
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t at = positions[i];
        offsets[i] = (int32_t)at_byte;
        if (at >= count) return 1;
        if (at < 0) continue;
        if (validity != NULL) validity[i >> 3] |= (unsigned char)(1u << (i & 7));
        int64_t start = starts[at], length = lengths[at];
        if (start < 0 || length < 0 || start + length > (int64_t)v[0].len || at_byte + length > room || at_byte + length > INT32_MAX) return 1;
        memcpy(out + at_byte, buffer + start, (size_t)length);
        if (field->check_utf8 && !is_utf8(out + at_byte, length)) return 2;
        at_byte += length;
    }
    offsets[n] = (int32_t)at_byte;
    return at_byte == room ? 0 : 1;
}

/* fill_fields(positions, fields[, release]) -> bool: the fields `locate_fields` located, filled into buffers the
 * caller allocated (the read path's pool), in one pass each with the GIL let go once when `release`. False (the
 * caller's general path, which names the fault) when a span is not UTF-8; ValueError when a position or span is
 * outside what a field reads or writes. */
static PyObject *fill_fields(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer positions;
    PyObject *specs;
    int release = 0;
    if (!PyArg_ParseTuple(args, "y*O!|p", &positions, &PyList_Type, &specs, &release)) return NULL;
    Py_ssize_t field_count = PyList_GET_SIZE(specs);
    Py_ssize_t n = field_count ? positions.len / (Py_ssize_t)sizeof(int64_t) / field_count : 0;
    PyObject *result = NULL;
    FillField *fields = PyMem_Calloc((size_t)(field_count ? field_count : 1), sizeof(FillField));
    if (fields == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    if (n * field_count * (Py_ssize_t)sizeof(int64_t) != positions.len) {
        PyErr_SetString(PyExc_ValueError, "the positions do not fit the fields");
        goto done;
    }
    for (Py_ssize_t f = 0; f < field_count; f++)
        if (fill_parse(&fields[f], PyList_GET_ITEM(specs, f)) < 0) goto done;
    int outcome = 0;
    {
        PyThreadState *saved = release ? PyEval_SaveThread() : NULL;
        for (Py_ssize_t f = 0; f < field_count && outcome == 0; f++)
            outcome = fill_one(&fields[f], (const int64_t *)positions.buf + f * n, n);
        if (saved != NULL) PyEval_RestoreThread(saved);
    }
    if (outcome == 1) PyErr_SetString(PyExc_ValueError, "a field's position or span is outside its buffers");
    else result = Py_NewRef(outcome == 0 ? Py_True : Py_False);
done:
    if (fields != NULL) {
        for (Py_ssize_t f = 0; f < field_count; f++)
            for (int k = 0; k < fields[f].held; k++) PyBuffer_Release(&fields[f].views[k]);
        PyMem_Free(fields);
    }
    PyBuffer_Release(&positions);
    return result;
}

/* span_runs(buffer, starts, lengths[, release]) -> bytes: as int64s, the index of every span whose bytes differ from the one
 * before it (0 first): where the runs of equal names begin (a chunk's column names, in runs as keys sort). ValueError
 * when a span is outside the buffer. Lets the GIL go for the comparisons when `release`. */
/* How many spans begin a run (`firsts` NULL), or their indexes written to `firsts`; -1 when a span is outside the buffer. */
static Py_ssize_t runs_of_spans(const unsigned char *data, Py_ssize_t size, const int64_t *start, const int64_t *length, Py_ssize_t n,
                                int64_t *firsts) {
    Py_ssize_t found = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (start[i] < 0 || length[i] < 0 || start[i] + length[i] > (int64_t)size) return -1;
        if (i == 0 || length[i] != length[i - 1] || memcmp(data + start[i], data + start[i - 1], (size_t)length[i]) != 0) {
            if (firsts != NULL) firsts[found] = i;
            found++;
        }
    }
    return found;
}

static PyObject *span_runs(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer buffer, starts, lengths;
    int release = 0;
    if (!PyArg_ParseTuple(args, "y*y*y*|p", &buffer, &starts, &lengths, &release)) return NULL;
    PyObject *result = NULL;
    Py_ssize_t n = starts.len / (Py_ssize_t)sizeof(int64_t), found;
    if (lengths.len != starts.len) {
        PyErr_SetString(PyExc_ValueError, "starts and lengths do not agree");
        goto done;
    }
    /* counted, then written into bytes of their size: no temporary the size of every span's */
    PyThreadState *saved = release ? PyEval_SaveThread() : NULL;
    found = runs_of_spans(buffer.buf, buffer.len, starts.buf, lengths.buf, n, NULL);
    if (saved != NULL) PyEval_RestoreThread(saved);
    if (found < 0) {
        PyErr_SetString(PyExc_ValueError, "byte spans run past their buffer");
        goto done;
    }
    result = PyBytes_FromStringAndSize(NULL, found * (Py_ssize_t)sizeof(int64_t));
    if (result != NULL) runs_of_spans(buffer.buf, buffer.len, starts.buf, lengths.buf, n, (int64_t *)PyBytes_AS_STRING(result));
done:
    PyBuffer_Release(&buffer);
    PyBuffer_Release(&starts);
    PyBuffer_Release(&lengths);
    return result;
}

static PyMethodDef methods[] = {
    {"walk_cells", walk_cells, METH_VARARGS, "Where each cell of an HFile data block and its value start (native int64 pairs), or None."},
    {"crc32c_chunks", crc32c_chunks, METH_VARARGS, "The CRC32C of each chunk of a block, big-endian, or None without the CPU's crc32 instruction (see _cells.c)."},
    {"use_inflater", use_inflater, METH_VARARGS, "Set libdeflate's decompressor functions by their addresses (see _cells.c)."},
    {"inflate_blocks", inflate_blocks, METH_VARARGS, "Data blocks lying end to end checked, inflated and walked with the GIL let go once, or None (see _cells.c)."},
    {"lay_out", lay_out, METH_VARARGS, "Walked blocks laid end to end: one buffer and each cell's row and value spans, or None (see _cells.c)."},
    {"decode_records", decode_records, METH_VARARGS, "Avro records decoded into per-path columns (see _cells.c)."},
    {"gather_spans", gather_spans, METH_VARARGS, "Byte spans copied end to end into given buffers, with int32 offsets (see _cells.c)."},
    {"index_in_strings", index_in_strings, METH_VARARGS, "Per string, the index of the first equal one of a set, or -1 (see _cells.c)."},
    {"distinct_in_runs", distinct_in_runs, METH_VARARGS, "Whether no string repeats, for strings in a few ascending runs (1, 0, or -1: not known) (see _cells.c)."},
    {"locate_fields", locate_fields, METH_VARARGS, "Where each chosen row's value is in each field, and what the fields hold there (see _cells.c)."},
    {"fill_fields", fill_fields, METH_VARARGS, "Located fields copied into given buffers with the GIL let go once, or False: not UTF-8 (see _cells.c)."},
    {"span_runs", span_runs, METH_VARARGS, "Where each run of equal byte spans begins, as int64s (see _cells.c)."},
    {"prefix_index_strings", prefix_index_strings, METH_VARARGS, "Per string, the index of the sorted prefix it starts with, or -1 (see _cells.c)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_cells", "HFile cells walked, metadata records decoded and file names matched, compiled.", -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__cells(void) {
    if (PyType_Ready(&OwnedType) < 0) return NULL;
    return PyModule_Create(&module);
}
