import CMicroHTTPD

extension HTTPServer {
    /// The libmicrohttpd version string the process runs against, for `cardvault version`.
    public static var libraryVersion: String { String(cString: MHD_get_version()) }
}
