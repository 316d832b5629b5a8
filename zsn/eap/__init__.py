"""802.1X / EAP shared by Wi-Fi (``zsn wifi connect --eap``) and wired ports (``zsn link
8021x``): the request and its checks (`request`), each backend's form of it (iwd's
``.8021x`` files in `iwd`, wpa_supplicant's network block in `supplicant`), the
certificates copied where the daemons read them (`certs`), and what the daemons' events
say about a failure (`events`)."""
