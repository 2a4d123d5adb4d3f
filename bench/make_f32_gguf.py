"""Write the embedded model as an F32 GGUF (j1's own fp32 weights), for llama.cpp in bench_decode.

    .venv/bin/python bench/make_f32_gguf.py /tmp/smollm2-135m-f32.gguf
    OMP_NUM_THREADS=2 .venv/bin/python bench/bench_decode.py --engines j1,llamacpp --gguf /tmp/smollm2-135m-f32.gguf

The shipped file is Q4_1; j1 decodes its fp32 de-quantisation. Every tensor is de-quantised with the
``gguf`` package and written back as F32 with all of the file's metadata, so llama.cpp computes with
the same weights as j1 (the comparison the decode issue asks for).
"""

from __future__ import annotations

import sys

import numpy as np


def main(out: str) -> int:
    from gguf import GGMLQuantizationType, GGUFReader, GGUFValueType, GGUFWriter
    from gguf.quants import dequantize

    from j1.models import embedded_gguf_path

    reader = GGUFReader(str(embedded_gguf_path()))
    arch = bytes(reader.fields["general.architecture"].parts[-1]).decode()
    writer = GGUFWriter(out, arch)
    for name, f in reader.fields.items():
        if name.startswith("GGUF.") or name in {"general.architecture", "general.file_type"}:
            continue  # the writer sets these itself
        kind = f.types[0]
        if kind == GGUFValueType.ARRAY:
            sub = f.types[-1]
            items = [bytes(f.parts[i]).decode() if sub == GGUFValueType.STRING else f.parts[i].tolist()[0]
                     for i in f.data]
            writer.add_key_value(name, items, kind, sub_type=sub)
        elif kind == GGUFValueType.STRING:
            writer.add_key_value(name, bytes(f.parts[-1]).decode(), kind)
        else:
            writer.add_key_value(name, f.parts[-1].tolist()[0], kind)
    writer.add_file_type(0)  # ALL_F32
    for t in reader.tensors:
        data = dequantize(t.data, t.tensor_type).astype(np.float32)
        shape = tuple(int(d) for d in reversed(t.shape.tolist()))  # GGUF stores dims fastest-first
        writer.add_tensor(t.name, data.reshape(shape), raw_dtype=GGMLQuantizationType.F32)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    print(f"{out}: {len(reader.tensors)} tensors as F32")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "/tmp/smollm2-135m-f32.gguf"))
