"""tests/tb_read.py TB_DIR CSV_DIR - zero's TensorBoard event file read by
TensorBoard's own code, checked against the csv_monitor files of the same run.

  - every record through TensorBoard's record reader (PyRecordReader_New):
    a bad length, header CRC or data CRC is an error here, not a skipped record;
  - every record parsed as TensorBoard's Event protobuf: the first is
    file_version "brain.Event:2", the rest carry float simple_values;
  - the scalars as TensorBoard's UI gets them (EventAccumulator), tag by tag,
    equal as float32 to the csv_monitor's step,value rows, in the same order.

Prints "ok NAME" / "FAIL NAME ..." per check and "N passed, M failed"; exits 1
on a failure, 77 when the tensorboard package cannot be imported (skipped).
"""
import csv
import glob
import os
import struct
import sys

try:
    from tensorboard.backend.event_processing import event_accumulator
    from tensorboard.compat.proto import event_pb2
    from tensorboard.compat.tensorflow_stub import errors, pywrap_tensorflow
except ImportError as ex:  # the package is optional: CI has none
    print("tb_read: no tensorboard package (%s): skipped" % ex)
    sys.exit(77)

passed = failed = 0


def check(name, cond, why=""):
    global passed, failed
    if cond:
        passed += 1
        print("ok " + name)
    else:
        failed += 1
        print("FAIL %s %s" % (name, why))


def f32(x):
    return struct.unpack("<f", struct.pack("<f", float(x)))[0]


def records(path):
    """Every record's bytes, by TensorBoard's reader; raises on a bad CRC."""
    reader = pywrap_tensorflow.PyRecordReader_New(path, 0, "", None)
    out = []
    while True:
        try:
            reader.GetNext()
        except errors.OutOfRangeError:
            return out
        out.append(reader.record())


def main():
    if len(sys.argv) != 3:
        print("usage: python3 tests/tb_read.py TB_DIR CSV_DIR", file=sys.stderr)
        return 2
    tb_dir, csv_dir = sys.argv[1], sys.argv[2]
    files = sorted(glob.glob(os.path.join(tb_dir, "events.out.tfevents.*")))
    check("one-event-file", len(files) == 1, "%s: %d event files" % (tb_dir, len(files)))
    if len(files) != 1:
        return 1
    try:
        recs = records(files[0])
        check("records-crc", len(recs) > 1, "%d records" % len(recs))
    except errors.DataLossError as ex:
        check("records-crc", False, str(ex))
        return 1
    events = [event_pb2.Event.FromString(r) for r in recs]
    check("file-version", events[0].file_version == "brain.Event:2", repr(events[0].file_version))
    simple = all(v.HasField("simple_value") for e in events[1:] for v in e.summary.value)
    check("simple-values", simple and all(e.summary.value for e in events[1:]))

    acc = event_accumulator.EventAccumulator(tb_dir, size_guidance={event_accumulator.SCALARS: 0})
    acc.Reload()
    tags = sorted(acc.Tags()["scalars"])
    csvs = sorted(glob.glob(os.path.join(csv_dir, "*.csv")))
    check("tags", len(tags) == len(csvs) and len(tags) >= 5,
          "TensorBoard sees %d tags %s, the csv_monitor wrote %d files" % (len(tags), tags, len(csvs)))
    for tag in tags:
        name = tag.replace("/", "_").replace(" ", "_")
        path = os.path.join(csv_dir, name + ".csv")
        if not os.path.exists(path):
            check("csv-" + name, False, "%s: no %s" % (tag, path))
            continue
        with open(path, newline="") as f:
            rows = list(csv.reader(f))
        want = [(int(r[0]), f32(r[1])) for r in rows[1:]]
        got = [(s.step, f32(s.value)) for s in acc.Scalars(tag)]
        check("values-" + name, got == want and len(got) > 0,
              "%s: TensorBoard %s, CSV %s" % (tag, got[:4], want[:4]))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
