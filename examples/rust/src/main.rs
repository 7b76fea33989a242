//! Runs the example service: `SHOP_REDIS_URL` (redis://127.0.0.1:6379)
//! and `SHOP_PORT` (3000) set where it connects and listens,
//! `SHOP_WAIT_REPLICAS` (0) the replicas a payment must reach.

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::var("SHOP_REDIS_URL").unwrap_or("redis://127.0.0.1:6379".into());
    let port = std::env::var("SHOP_PORT").unwrap_or("3000".into());
    let con = seckill_shop::connect(&url).await?;
    let wait_replicas = std::env::var("SHOP_WAIT_REPLICAS").unwrap_or("0".into());
    let shop = seckill_shop::Shop {
        con,
        wait_replicas: wait_replicas.parse()?,
    };
    let listener = tokio::net::TcpListener::bind(format!("127.0.0.1:{port}")).await?;
    axum::serve(listener, seckill_shop::shop(shop)).await?;
    Ok(())
}
