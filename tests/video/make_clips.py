#!/usr/bin/python3
"""Makes the video tests' clips with the ffmpeg program from the shared photos, and what
cv2.VideoCapture (python3-opencv on the same FFmpeg) decodes from each: the reference the engine's
reader must equal bit for bit.

Usage: /usr/bin/python3 tests/video/make_clips.py OUT_DIR

Idempotent and safe to run from several test processes at once: OUT_DIR/stamp holds a hash of this
script, of the ffmpeg version and of the OpenCV module installed; the clips are made again only when it differs, under
a lock. For each clip NAME it writes NAME (the clip), NAME.cv2.bgr (every frame cv2 reads, BGR,
concatenated) and NAME.cv2.json ({"frames", "width", "height"}); for the rotated clips also
NAME.cv2-stored.bgr/.json (cv2 with CAP_PROP_ORIENTATION_AUTO off). Clips are small (at most
320x240, at most 12 frames but for the one the CLI's test interrupts) so that the whole video
test set stays fast.
"""
import fcntl
import hashlib
import importlib.util
import json
import os
import subprocess
import sys

SHARED = os.environ.get("GPEN_SHARED_DIR") or os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared")
KIDS = os.path.join(SHARED, "images", "kids_1024x768.jpg")
CROWD = os.path.join(SHARED, "images", "crowd_1600x898.jpg")

# A pan across the photo, and a zoom into it, as ffmpeg filters on a looped still.
PAN = "crop=w=640:h=480:x='24*n':y='8*n',scale={w}:{h}"
ZOOM = "crop=w='900-40*n':h='675-30*n':x='(iw-ow)/2':y='(ih-oh)/3',scale={w}:{h}"
# Frame times in milliseconds with uneven gaps (variable frame rate).
VFR = "settb=1/1000,setpts='N*40+if(gte(N\\,4)\\,25\\,0)+if(gte(N\\,7)\\,90\\,0)+if(gte(N\\,9)\\,7\\,0)'"

SRT = """1
00:00:00,000 --> 00:00:00,200
first line

2
00:00:00,200 --> 00:00:00,400
second line
"""


def ffmpeg(*args):
    subprocess.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-y", *args], check=True)


def still(photo, vf, frames, rate, *out):
    ffmpeg("-loop", "1", "-framerate", str(rate), "-i", photo, "-vf", vf, "-frames:v", str(frames), *out)


def make(out):
    x264 = ["-c:v", "libx264", "-preset", "veryfast"]
    tone = ["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=16000:duration=0.5"]
    # 8-bit 4:2:0 H.264, 25 fps, 160x120 (coded 160x128), an AAC track, container and stream tags.
    ffmpeg("-loop", "1", "-framerate", "25", "-i", KIDS, *tone, "-vf", PAN.format(w=160, h=120), "-t", "0.48",
           *x264, "-pix_fmt", "yuv420p", "-c:a", "aac", "-b:a", "32k",
           "-metadata", "title=gpen video test", "-metadata:s:a:0", "language=fra",
           os.path.join(out, "h264_pan25_audio.mp4"))
    # A zoom at 24 fps, 168x104 (coded 168x112), with an SRT subtitle track, in Matroska.
    srt = os.path.join(out, "lines.srt")
    with open(srt, "w") as f:
        f.write(SRT)
    ffmpeg("-loop", "1", "-framerate", "24", "-i", CROWD, "-i", srt, "-vf", ZOOM.format(w=168, h=104),
           "-frames:v", "10", *x264, "-pix_fmt", "yuv420p", "-c:s", "srt", "-map", "0:v", "-map", "1:s",
           os.path.join(out, "h264_zoom24_subs.mkv"))
    # 10-bit 4:2:0 H.264 at 30 fps, 160x120: cv2 converts the coded 128 rows.
    still(KIDS, PAN.format(w=160, h=120), 10, 30, *x264, "-pix_fmt", "yuv420p10le",
          os.path.join(out, "h264_10bit30.mp4"))
    # 10-bit 4:2:0 HEVC with a BT.709 colour description.
    still(KIDS, ZOOM.format(w=176, h=144), 8, 25, "-c:v", "libx265", "-preset", "ultrafast",
          "-x265-params", "log-level=error", "-pix_fmt", "yuv420p10le", "-color_primaries", "bt709",
          "-color_trc", "bt709", "-colorspace", "bt709", "-color_range", "tv", os.path.join(out, "hevc_10bit.mkv"))
    # Variable frame rate.
    still(KIDS, PAN.format(w=160, h=120) + "," + VFR, 10, 25, *x264, "-pix_fmt", "yuv420p", "-fps_mode", "passthrough",
          "-enc_time_base", "1/1000", "-video_track_timescale", "1000", os.path.join(out, "vfr.mp4"))
    # Rotation metadata (display matrices), on a copy of the first clip's video.
    for deg in (90, 270):
        ffmpeg("-i", os.path.join(out, "h264_pan25_audio.mp4"), "-map", "0:v", "-c", "copy",
               "-metadata:s:v:0", f"rotate={deg}", os.path.join(out, f"rot{deg}.mp4"))
    still(KIDS, PAN.format(w=160, h=120), 8, 25, "-c:v", "libvpx-vp9", "-deadline", "realtime", "-cpu-used", "8",
          "-pix_fmt", "yuv420p", os.path.join(out, "vp9.webm"))
    still(KIDS, PAN.format(w=160, h=120), 6, 25, "-c:v", "libaom-av1", "-cpu-used", "8", "-pix_fmt", "yuv420p",
          os.path.join(out, "av1.mkv"))
    # Faces large enough to detect and restore (the CLI's tests).
    still(KIDS, "crop=w=560:h=420:x='140+6*n':y=100,scale=320:240", 6, 25, *x264, "-pix_fmt", "yuv420p",
          os.path.join(out, "faces_320.mp4"))
    # Segments (gpen_engine.ray_restore): a keyframe every 4 frames, B-frames, faces and an AAC track.
    ffmpeg("-loop", "1", "-framerate", "25", "-i", KIDS, *tone, "-vf", "crop=w=560:h=420:x='140+6*n':y=100,scale=320:240",
           "-t", "0.48", *x264, "-pix_fmt", "yuv420p", "-g", "4", "-keyint_min", "4", "-sc_threshold", "0",
           "-c:a", "aac", "-b:a", "32k", os.path.join(out, "keyframes4_audio.mp4"))
    # A still photo under fresh noise in every frame, re-encoded: the detector's landmarks jitter
    # although nothing moves (`gpen video --smooth`'s measurement).
    still(KIDS, "crop=w=560:h=420:x=140:y=100,scale=320:240,noise=alls=24:allf=t:all_seed=7", 12, 25, *x264,
          "-pix_fmt", "yuv420p", os.path.join(out, "still_noise_320.mp4"))
    # Long enough (30 s) to be interrupted while it is written.
    ffmpeg("-f", "lavfi", "-i", "testsrc2=size=160x120:rate=25", "-frames:v", "750", *x264, "-pix_fmt", "yuv420p",
           os.path.join(out, "long.mp4"))
    # Damaged copies: a faststart MP4 cut off after 60% of its bytes, and a Matroska file with a
    # run of bytes in the middle of its video data overwritten.
    whole = os.path.join(out, "faststart.mp4")
    still(KIDS, PAN.format(w=160, h=120), 12, 25, *x264, "-pix_fmt", "yuv420p", "-g", "4", "-movflags", "+faststart",
          whole)
    data = open(whole, "rb").read()
    with open(os.path.join(out, "truncated.mp4"), "wb") as f:
        f.write(data[: len(data) * 6 // 10])
    os.remove(whole)
    mkv = os.path.join(out, "clean.mkv")
    still(KIDS, PAN.format(w=160, h=120), 12, 25, *x264, "-pix_fmt", "yuv420p", "-g", "4", mkv)
    data = bytearray(open(mkv, "rb").read())
    at = len(data) // 2
    data[at:at + 400] = bytes((i * 37 + 11) & 0xFF for i in range(400))
    with open(os.path.join(out, "corrupt.mkv"), "wb") as f:
        f.write(data)
    os.remove(mkv)
    # An MPEG-2 stream whose sequence display extension gives colour primaries, transfer and
    # matrix codes no standard defines (FFmpeg's demuxer passes them on unchecked).
    m2v = os.path.join(out, "clean.m2v")
    still(KIDS, PAN.format(w=160, h=120), 4, 25, "-c:v", "mpeg2video", "-color_primaries", "bt709",
          "-color_trc", "bt709", "-colorspace", "bt709", "-f", "mpeg2video", m2v)
    data = bytearray(open(m2v, "rb").read())
    at = data.find(b"\x00\x00\x01\xb5")
    while at >= 0 and not (data[at + 4] >> 4 == 2 and data[at + 4] & 1):  # sequence display, colour given
        at = data.find(b"\x00\x00\x01\xb5", at + 1)
    assert at >= 0, "no colour description in " + m2v
    data[at + 5:at + 8] = bytes((205, 200, 190))
    with open(os.path.join(out, "mpeg2_unknown_colour.m2v"), "wb") as f:
        f.write(data)
    os.remove(m2v)
    with open(os.path.join(out, "not_a_video.mp4"), "w") as f:
        f.write("these are notes, not a video\n")


def cv2_frames(path, suffix, auto_orientation):
    import cv2  # only when the clips are made: importing it takes a second

    cap = cv2.VideoCapture(path, cv2.CAP_FFMPEG)
    cap.set(cv2.CAP_PROP_ORIENTATION_AUTO, 1 if auto_orientation else 0)
    frames, shape = 0, (0, 0)
    with open(path + suffix + ".bgr", "wb") as f:
        while True:
            ok, img = cap.read()
            if not ok:
                break
            f.write(img.tobytes())
            frames, shape = frames + 1, img.shape
    with open(path + suffix + ".json", "w") as f:
        json.dump({"frames": frames, "height": shape[0], "width": shape[1]}, f)


def stamp():
    h = hashlib.sha256(open(__file__, "rb").read())
    h.update(subprocess.run(["ffmpeg", "-version"], capture_output=True, check=True).stdout)
    cv2_module = importlib.util.find_spec("cv2").origin  # found, not imported
    h.update(f"{cv2_module} {os.stat(cv2_module).st_mtime_ns}".encode())
    return h.hexdigest()


def main():
    out = os.path.abspath(sys.argv[1])
    os.makedirs(out, exist_ok=True)
    want = stamp()
    with open(os.path.join(out, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        stamp_path = os.path.join(out, "stamp")
        if os.path.exists(stamp_path) and open(stamp_path).read() == want:
            return
        make(out)
        for name in ("h264_pan25_audio.mp4", "h264_zoom24_subs.mkv", "h264_10bit30.mp4", "hevc_10bit.mkv", "vfr.mp4",
                     "rot90.mp4", "rot270.mp4", "vp9.webm", "av1.mkv", "truncated.mp4", "corrupt.mkv",
                     "mpeg2_unknown_colour.m2v"):
            cv2_frames(os.path.join(out, name), ".cv2", True)
        for name in ("rot90.mp4", "rot270.mp4"):
            cv2_frames(os.path.join(out, name), ".cv2-stored", False)
        with open(stamp_path, "w") as f:
            f.write(want)


if __name__ == "__main__":
    main()
