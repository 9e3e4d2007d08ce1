"""What travels on the wire: request and response Structs, body decoding, line splitting."""
